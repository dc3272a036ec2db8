"""Training-free CCQ on three more fla linear-attention families: CCQ-DeltaNet, CCQ-RetNet, CCQ-HGRN2.

Each reads ``o_t = S_t^T q_t`` from a state its keys are written into (DeltaNet: the delta rule with
L2-normalised q/k; RetNet: retention, keys after the rotary embedding; HGRN2: GLA form with the key
``1 - f_t``), so the contraction applies to the query the read receives (ccq_read_hook.py). Meant for
``--ccq-lambda`` on a stock checkpoint: lambda 0 is the backbone bit for bit (tests/models). Mamba's
selective scan and softmax attention have no such read; loading refuses CCQ for them (catalog.py).
"""

from __future__ import annotations

from fla.layers import delta_net as fla_delta_net_layer
from fla.layers import hgrn2 as fla_hgrn2_layer
from fla.layers import multiscale_retention as fla_retention_layer
from fla.layers.delta_net import DeltaNet
from fla.layers.hgrn2 import HGRN2Attention
from fla.layers.multiscale_retention import MultiScaleRetention
from fla.models.delta_net import DeltaNetConfig, DeltaNetForCausalLM, DeltaNetModel
from fla.models.hgrn2 import HGRN2Config, HGRN2ForCausalLM, HGRN2Model
from fla.models.retnet import RetNetConfig, RetNetForCausalLM, RetNetModel

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQDeltaNet(HookedCCQLayer, DeltaNet):
    READ_MODULE, READS = fla_delta_net_layer, ("chunk_delta_rule", "fused_recurrent_delta_rule")
    HEAD_DIM = "head_k_dim"


class CCQMultiScaleRetention(HookedCCQLayer, MultiScaleRetention):
    READ_MODULE = fla_retention_layer
    READS = ("chunk_retention", "fused_chunk_retention", "fused_recurrent_retention", "parallel_retention")
    HEAD_DIM = "head_k_dim"


class CCQHGRN2Attention(HookedCCQLayer, HGRN2Attention):
    READ_MODULE, READS = fla_hgrn2_layer, ("chunk_gla", "fused_recurrent_gla", "fused_chunk_gla")
    HEAD_DIM = "head_f_dim"


def _ccq_classes(name: str, config_base, model_base, lm_base, backbone_layer: type, ccq_layer: type):
    """(Config, Model, ForCausalLM) of one CCQ family over an fla backbone."""

    def config_init(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        config_base.__init__(self, **kwargs)

    config = type(f"CCQ{config_base.__name__}", (config_base,), {
        "model_type": name, "__init__": config_init, "__module__": __name__})

    def model_init(self, cfg):
        model_base.__init__(self, cfg)
        attach_to_layers(self, backbone_layer, ccq_layer, cfg, ccq_layer.HEAD_DIM)

    def lm_init(self, cfg):
        lm_base.__init__(self, cfg)
        attach_to_layers(self.model, backbone_layer, ccq_layer, cfg, ccq_layer.HEAD_DIM)

    model = type(f"CCQ{model_base.__name__}", (model_base,), {
        "config_class": config, "__init__": model_init, "__module__": __name__})
    lm = type(f"CCQ{lm_base.__name__}", (lm_base,), {
        "config_class": config, "__init__": lm_init, "__module__": __name__})
    return config, model, lm


TRAINING_FREE_MODELS = (
    _ccq_classes("ccq_delta_net", DeltaNetConfig, DeltaNetModel, DeltaNetForCausalLM, DeltaNet, CCQDeltaNet),
    _ccq_classes("ccq_retnet", RetNetConfig, RetNetModel, RetNetForCausalLM, MultiScaleRetention, CCQMultiScaleRetention),
    _ccq_classes("ccq_hgrn2", HGRN2Config, HGRN2Model, HGRN2ForCausalLM, HGRN2Attention, CCQHGRN2Attention),
)
