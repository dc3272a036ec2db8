"""CCQ-GDN: fla's Gated DeltaNet with the curvature-conditioned read, trained as its own model. Only the layer's read
changes."""

from __future__ import annotations

from fla.layers import gated_deltanet as fla_gdn_layer
from fla.layers.gated_deltanet import GatedDeltaNet
from fla.models.gated_deltanet import GatedDeltaNetConfig, GatedDeltaNetForCausalLM, GatedDeltaNetModel

from ccq_eval.models.ccq_classes import ccq_family_classes
from ccq_eval.models.ccq_read_hook import HookedCCQLayer


class CCQGatedDeltaNet(HookedCCQLayer, GatedDeltaNet):
    """Gated DeltaNet's layer, fla's forward unchanged; with use_ccq the read uses (I - lam Sigma_t) q
    (ccq_read_hook.py). The backbone reads and writes with L2-normalised q and k, so CCQ works in that space:
    the hook normalises q and k (fla's formula, x / sqrt(|x|^2 + 1e-6)), k is written as is, and the
    contracted q is read without a second normalisation. The cache's recurrent_state is (S, CCQState)."""

    READ_MODULE, READS = fla_gdn_layer, ("chunk_gated_delta_rule", "fused_recurrent_gated_delta_rule")
    HEAD_DIM = "head_k_dim"


# CCQGatedDeltaNetConfig, CCQGatedDeltaNetModel, CCQGatedDeltaNetForCausalLM: what transformers registers
CCQ_MODELS = CCQGatedDeltaNetConfig, CCQGatedDeltaNetModel, CCQGatedDeltaNetForCausalLM = ccq_family_classes(
    "ccq_gated_deltanet", GatedDeltaNetConfig, GatedDeltaNetModel, GatedDeltaNetForCausalLM, GatedDeltaNet,
    CCQGatedDeltaNet)
