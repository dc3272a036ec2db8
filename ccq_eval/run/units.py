"""A unit's identity (docs/architecture.md, "Unit identity") and its metric rows."""

from __future__ import annotations

from ccq_eval.data.cache import stable_hash

# config fields that say nothing about the numbers a model produces
VOLATILE_CONFIG_KEYS = ("transformers_version", "_name_or_path", "name_or_path", "architectures", "dtype",
                        "torch_dtype", "use_cache", "output_attentions", "output_hidden_states")


def numeric_config(provenance: dict) -> dict:
    return {k: v for k, v in provenance["config"].items() if k not in VOLATILE_CONFIG_KEYS}


def unit_key(provenance: dict, suite, task: str, length: int, settings: dict, data_key: dict) -> str:
    """Weights, numeric config (CCQ overrides included), suite, task, length, every setting that can
    change a number, and the dataset's key. A suite whose keys once repeated the length in the settings
    (``Suite.length_in_key_settings``, as "max_length") keeps that form, so stores written then resume with
    nothing rerun; the settings themselves no longer carry it: a unit's length has one form, its context_length."""
    keyed = {**settings, "max_length": length} if suite.length_in_key_settings else settings
    identity = {"weights": provenance["weights_sha256"], "config": numeric_config(provenance), "suite": suite.name,
                "task": task, "context_length": length, "settings": keyed, "data": data_key}
    return stable_hash(identity)


def metric_row(label: str, model: str, name: str, value: float, **extra) -> dict:
    """A metric row with the run's label and model spec."""
    return {"label": label, "model": model, "metric": name, "value": value, **extra}
