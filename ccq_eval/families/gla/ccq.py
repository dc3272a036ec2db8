"""CCQ-GLA: fla's GLA with the curvature-conditioned read, trained as its own model (the paper's). Only the attention
layer's read changes."""

from __future__ import annotations

from fla.layers import gla as fla_gla_layer
from fla.layers.gla import GatedLinearAttention
from fla.models.gla import GLAConfig, GLAForCausalLM, GLAModel

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQGLAConfig(GLAConfig):
    model_type = "ccq_gla"

    def __init__(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        super().__init__(**kwargs)


class CCQGatedLinearAttention(HookedCCQLayer, GatedLinearAttention):
    """GLA's layer, fla's forward unchanged; with use_ccq the query entering its read is (I - lam Sigma_t) q
    (ccq_read_hook.py). Sigma_t comes from the k the state is written with (after short conv and feature map,
    repeated per query head under GQA, as fla hands it to the read). The cache's recurrent_state is
    (S, CCQState)."""

    READ_MODULE, READS = fla_gla_layer, ("chunk_gla", "fused_recurrent_gla", "fused_chunk_gla")


class CCQGLAModel(GLAModel):
    config_class = CCQGLAConfig

    def __init__(self, config: CCQGLAConfig):
        super().__init__(config)
        attach_to_layers(self, GatedLinearAttention, CCQGatedLinearAttention, config)


class CCQGLAForCausalLM(GLAForCausalLM):
    config_class = CCQGLAConfig

    def __init__(self, config: CCQGLAConfig):
        super().__init__(config)
        attach_to_layers(self.model, GatedLinearAttention, CCQGatedLinearAttention, config)


CCQ_MODELS = (CCQGLAConfig, CCQGLAModel, CCQGLAForCausalLM)  # what transformers registers (models/registration.py)
