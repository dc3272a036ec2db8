"""Training-free CCQ-HGRN2: HGRN2's read is GLA's with the key ``1 - f_t``, contracted (ccq_read_hook.py)."""

from __future__ import annotations

from fla.layers import hgrn2 as fla_hgrn2_layer
from fla.layers.hgrn2 import HGRN2Attention
from fla.models.hgrn2 import HGRN2Config, HGRN2ForCausalLM, HGRN2Model

from ccq_eval.models.ccq_classes import ccq_family_classes
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQHGRN2Attention(HookedCCQLayer, HGRN2Attention):
    READ_MODULE, READS = fla_hgrn2_layer, ("chunk_gla", "fused_recurrent_gla", "fused_chunk_gla")
    HEAD_DIM = "head_f_dim"


CCQ_MODELS = ccq_family_classes("ccq_hgrn2", HGRN2Config, HGRN2Model, HGRN2ForCausalLM, HGRN2Attention,
                                CCQHGRN2Attention)
