"""Training-free CCQ-DeltaNet: the delta rule's read with L2-normalised q/k, contracted (ccq_read_hook.py). Meant for
``--ccq-lambda`` on a stock checkpoint: lambda 0 is the backbone bit for bit (tests/models)."""

from __future__ import annotations

from fla.layers import delta_net as fla_delta_net_layer
from fla.layers.delta_net import DeltaNet
from fla.models.delta_net import DeltaNetConfig, DeltaNetForCausalLM, DeltaNetModel

from ccq_eval.models.ccq_classes import ccq_family_classes
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQDeltaNet(HookedCCQLayer, DeltaNet):
    READ_MODULE, READS = fla_delta_net_layer, ("chunk_delta_rule", "fused_recurrent_delta_rule")
    HEAD_DIM = "head_k_dim"


CCQ_MODELS = ccq_family_classes("ccq_delta_net", DeltaNetConfig, DeltaNetModel, DeltaNetForCausalLM, DeltaNet,
                                CCQDeltaNet)
