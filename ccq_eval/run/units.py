"""A unit's identity (docs/architecture.md, "Unit identity") and its metric rows."""

from __future__ import annotations

from ccq_eval.data.cache import stable_hash

# config fields that say nothing about the numbers a model produces
VOLATILE_CONFIG_KEYS = ("transformers_version", "_name_or_path", "name_or_path", "architectures", "dtype",
                        "torch_dtype", "use_cache", "output_attentions", "output_hidden_states")


def numeric_config(provenance: dict) -> dict:
    return {k: v for k, v in provenance["config"].items() if k not in VOLATILE_CONFIG_KEYS}


# S-NIAH and LongBench units were once keyed with their context length repeated in the settings
# ("max_length"); their keys keep that form, so stores written then resume with nothing rerun. The settings
# themselves no longer carry it: a unit's length has one form, its context_length.
LENGTH_ALSO_IN_KEYED_SETTINGS = ("sniah", "longbench")


def unit_key(provenance: dict, suite: str, task: str, length: int, settings: dict, data_key: dict) -> str:
    """Weights, numeric config (CCQ overrides included), suite, task, length, every setting that can
    change a number, and the dataset's key."""
    keyed = {**settings, "max_length": length} if suite in LENGTH_ALSO_IN_KEYED_SETTINGS else settings
    identity = {"weights": provenance["weights_sha256"], "config": numeric_config(provenance), "suite": suite,
                "task": task, "context_length": length, "settings": keyed, "data": data_key}
    return stable_hash(identity)


def metric_row(label: str, model: str, name: str, value: float, **extra) -> dict:
    """A metric row with the run's label and model spec."""
    return {"label": label, "model": model, "metric": name, "value": value, **extra}
