"""A unit's identity (docs/architecture.md, "Unit identity") and its metric rows."""

from __future__ import annotations

from ccq_eval.data.cache import stable_hash

# config fields that say nothing about the numbers a model produces
VOLATILE_CONFIG_KEYS = ("transformers_version", "_name_or_path", "name_or_path", "architectures", "dtype",
                        "torch_dtype", "use_cache", "output_attentions", "output_hidden_states")


def numeric_config(provenance: dict) -> dict:
    return {k: v for k, v in provenance["config"].items() if k not in VOLATILE_CONFIG_KEYS}


def unit_key(provenance: dict, suite: str, task: str, length: int, settings: dict, data_key: dict) -> str:
    """Weights, numeric config (CCQ overrides included), suite, task, length, every setting that can
    change a number, and the dataset's key."""
    identity = {"weights": provenance["weights_sha256"], "config": numeric_config(provenance), "suite": suite,
                "task": task, "context_length": length, "settings": settings, "data": data_key}
    return stable_hash(identity)


def metric_row(label: str, model: str, name: str, value: float, **extra) -> dict:
    """A metric row with the run's label and model spec."""
    return {"label": label, "model": model, "metric": name, "value": value, **extra}
