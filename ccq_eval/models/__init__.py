"""Models: the CCQ operator, the CCQ-GLA / CCQ-GDN families, the CPU backend, and loading.

Importing this package registers ``ccq_gla`` and ``ccq_gated_deltanet`` with transformers' Auto classes.
"""

from ccq_eval.models.ccq import CCQState, contract_query, contract_query_step, naive_contract_query
from ccq_eval.models.ccq_gated_deltanet import (
    CCQGatedDeltaNet,
    CCQGatedDeltaNetConfig,
    CCQGatedDeltaNetForCausalLM,
    CCQGatedDeltaNetModel,
)
from ccq_eval.models.ccq_gla import CCQGatedLinearAttention, CCQGLAConfig, CCQGLAForCausalLM, CCQGLAModel
from ccq_eval.models.ccq_read import CCQSettings
from ccq_eval.models.cpu_backend import install_cpu_backend
from ccq_eval.models.registration import register_ccq_models
from ccq_eval.models.loading import LoadedModel, ModelLoadError, load_model

register_ccq_models()

__all__ = [
    "CCQGLAConfig", "CCQGLAForCausalLM", "CCQGLAModel", "CCQGatedDeltaNet", "CCQGatedDeltaNetConfig",
    "CCQGatedDeltaNetForCausalLM", "CCQGatedDeltaNetModel", "CCQGatedLinearAttention", "CCQSettings",
    "CCQState", "LoadedModel", "ModelLoadError", "contract_query", "contract_query_step", "install_cpu_backend",
    "load_model", "naive_contract_query",
]
