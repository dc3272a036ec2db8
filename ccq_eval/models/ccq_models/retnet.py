"""Training-free CCQ-RetNet: retention's read, its keys after the rotary embedding, contracted (ccq_read_hook.py)."""

from __future__ import annotations

from fla.layers import multiscale_retention as fla_retention_layer
from fla.layers.multiscale_retention import MultiScaleRetention
from fla.models.retnet import RetNetConfig, RetNetForCausalLM, RetNetModel

from ccq_eval.models.ccq_classes import ccq_family_classes
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQMultiScaleRetention(HookedCCQLayer, MultiScaleRetention):
    READ_MODULE = fla_retention_layer
    READS = ("chunk_retention", "fused_chunk_retention", "fused_recurrent_retention", "parallel_retention")
    HEAD_DIM = "head_k_dim"


CCQ_MODELS = ccq_family_classes("ccq_retnet", RetNetConfig, RetNetModel, RetNetForCausalLM, MultiScaleRetention,
                                CCQMultiScaleRetention)
