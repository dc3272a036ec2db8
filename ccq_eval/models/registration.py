"""Registers the CCQ families (``ccq_gla``, ``ccq_gated_deltanet``, and the training-free
``ccq_delta_net``, ``ccq_retnet``, ``ccq_hgrn2``) with transformers' Auto classes:
done where models are loaded (loading.py) and on ``import ccq_eval.models``, never by the CLI."""

from __future__ import annotations


def register_ccq_models() -> None:
    """Idempotent."""
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM

    from ccq_eval.models.ccq_gated_deltanet import (CCQGatedDeltaNetConfig, CCQGatedDeltaNetForCausalLM,
                                                    CCQGatedDeltaNetModel)
    from ccq_eval.models.ccq_gla import CCQGLAConfig, CCQGLAForCausalLM, CCQGLAModel
    from ccq_eval.models.ccq_training_free import TRAINING_FREE_MODELS

    for config, model, lm in ((CCQGLAConfig, CCQGLAModel, CCQGLAForCausalLM),
                              (CCQGatedDeltaNetConfig, CCQGatedDeltaNetModel, CCQGatedDeltaNetForCausalLM),
                              *TRAINING_FREE_MODELS):
        AutoConfig.register(config.model_type, config, exist_ok=True)
        AutoModel.register(config, model, exist_ok=True)
        AutoModelForCausalLM.register(config, lm, exist_ok=True)
