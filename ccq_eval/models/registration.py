"""Registers every CCQ family a family's row names (``Family.ccq_models``) with transformers' Auto classes: done where
models are loaded (loading.py), never by the CLI."""

from __future__ import annotations


def register_ccq_models() -> None:
    """Every family's CCQ classes (Family.ccq_models: its ccq.py's CCQ_MODELS). Idempotent."""
    import importlib

    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    from ccq_eval.families import fla_families

    for found in fla_families().values():
        if not found.ccq_models:
            continue
        config, model, lm = importlib.import_module(found.ccq_models).CCQ_MODELS
        AutoConfig.register(config.model_type, config, exist_ok=True)
        AutoModel.register(config, model, exist_ok=True)
        AutoModelForCausalLM.register(config, lm, exist_ok=True)
