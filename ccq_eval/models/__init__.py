"""Models: the CCQ operator, the CCQ families (trained CCQ-GLA / CCQ-GDN; training-free CCQ on DeltaNet, RetNet
and HGRN2), the CPU backend, and loading.

Importing this package registers every CCQ family (registration.py: ``ccq_gla``, ``ccq_gated_deltanet``,
``ccq_delta_net``, ``ccq_retnet``, ``ccq_hgrn2``) with transformers' Auto classes; the CLI never imports it.
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
