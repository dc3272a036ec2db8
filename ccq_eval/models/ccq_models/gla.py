"""CCQ-GLA: fla's GLA with the curvature-conditioned read, trained as its own model (the paper's). Only the attention
layer's read changes."""

from __future__ import annotations

from fla.layers import gla as fla_gla_layer
from fla.layers.gla import GatedLinearAttention
from fla.models.gla import GLAConfig, GLAForCausalLM, GLAModel

from ccq_eval.models.ccq_classes import ccq_family_classes
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQGatedLinearAttention(HookedCCQLayer, GatedLinearAttention):
    """GLA's layer, fla's forward unchanged; with use_ccq the query entering its read is (I - lam Sigma_t) q
    (ccq_read_hook.py). Sigma_t comes from the k the state is written with (after short conv and feature map,
    repeated per query head under GQA, as fla hands it to the read). The cache's recurrent_state is
    (S, CCQState)."""

    READ_MODULE, READS = fla_gla_layer, ("chunk_gla", "fused_recurrent_gla", "fused_chunk_gla")
    HEAD_DIM = "head_k_dim"


# CCQGLAConfig, CCQGLAModel, CCQGLAForCausalLM: what transformers registers (models/registration.py)
CCQ_MODELS = CCQGLAConfig, CCQGLAModel, CCQGLAForCausalLM = ccq_family_classes(
    "ccq_gla", GLAConfig, GLAModel, GLAForCausalLM, GatedLinearAttention, CCQGatedLinearAttention)
