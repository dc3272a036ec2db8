"""CCQ-GDN: fla's Gated DeltaNet with the curvature-conditioned read. Only the layer's read changes."""

from __future__ import annotations

from fla.layers import gated_deltanet as fla_gdn_layer
from fla.layers.gated_deltanet import GatedDeltaNet
from fla.models.gated_deltanet import GatedDeltaNetConfig, GatedDeltaNetForCausalLM, GatedDeltaNetModel

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQGatedDeltaNetConfig(GatedDeltaNetConfig):
    model_type = "ccq_gated_deltanet"

    def __init__(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        super().__init__(**kwargs)


class CCQGatedDeltaNet(HookedCCQLayer, GatedDeltaNet):
    """Gated DeltaNet's layer, fla's forward unchanged; with use_ccq the read uses (I - lam Sigma_t) q
    (ccq_read_hook.py). The backbone reads and writes with L2-normalised q and k, so CCQ works in that space:
    the hook normalises q and k (fla's formula, x / sqrt(|x|^2 + 1e-6)), k is written as is, and the
    contracted q is read without a second normalisation. The cache's recurrent_state is (S, CCQState)."""

    READ_MODULE, READS = fla_gdn_layer, ("chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")


class CCQGatedDeltaNetModel(GatedDeltaNetModel):
    config_class = CCQGatedDeltaNetConfig

    def __init__(self, config: CCQGatedDeltaNetConfig):
        super().__init__(config)
        attach_to_layers(self, GatedDeltaNet, CCQGatedDeltaNet, config)


class CCQGatedDeltaNetForCausalLM(GatedDeltaNetForCausalLM):
    config_class = CCQGatedDeltaNetConfig

    def __init__(self, config: CCQGatedDeltaNetConfig):
        super().__init__(config)
        attach_to_layers(self.model, GatedDeltaNet, CCQGatedDeltaNet, config)


CCQ_MODELS = (CCQGatedDeltaNetConfig, CCQGatedDeltaNetModel, CCQGatedDeltaNetForCausalLM)  # registered with transformers
