"""CCQ-GDN: fla's Gated DeltaNet with the curvature-conditioned read. Only the layer's read changes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from einops import rearrange
from fla.layers import gated_deltanet as fla_gdn_layer
from fla.layers.gated_deltanet import GatedDeltaNet
from fla.layers.utils import get_layer_cache, repad_hidden_states, unpad_hidden_states, update_layer_cache
from fla.models.gated_deltanet import GatedDeltaNetConfig, GatedDeltaNetForCausalLM, GatedDeltaNetModel

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields, short_conv_qkv, split_cached_state
from ccq_eval.models.cpu_ops import l2norm


class CCQGatedDeltaNetConfig(GatedDeltaNetConfig):
    model_type = "ccq_gated_deltanet"

    def __init__(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        super().__init__(**kwargs)


class CCQGatedDeltaNet(GatedDeltaNet):
    """Gated DeltaNet's layer; with use_ccq the read uses (I - lam Sigma_t) q.

    The backbone reads and writes with L2-normalised q and k, so CCQ works in that space: q and k are
    normalised here (fla's formula, x / sqrt(|x|^2 + 1e-6)), k is written as is, and the contracted q
    is read without a second normalisation. The cache's recurrent_state is (S, CCQState).
    """

    def forward(self, hidden_states, attention_mask=None, past_key_values=None, use_cache=False,
                output_attentions=False, **kwargs):
        if not self.use_ccq:
            return super().forward(hidden_states, attention_mask, past_key_values, use_cache, output_attentions,
                                   **kwargs)
        batch_size, q_len, _ = hidden_states.shape
        if self.training or torch.is_grad_enabled():
            mode = "chunk"
        else:
            mode = "fused_recurrent" if q_len <= 64 else self.mode
        last_state = get_layer_cache(module=self, past_key_values=past_key_values)
        cu_seqlens = kwargs.get("cu_seqlens")
        hidden_states, indices, cu_seqlens = unpad_hidden_states(hidden_states, cu_seqlens, attention_mask, q_len)

        conv_states = None
        if self.use_short_conv:
            q, k, v, conv_states = short_conv_qkv(self, hidden_states, last_state, use_cache, cu_seqlens)
        else:
            q, k, v = (F.silu(proj(hidden_states)) for proj in (self.q_proj, self.k_proj, self.v_proj))

        q, k = (rearrange(x, "... (h d) -> ... h d", d=self.head_k_dim) for x in (q, k))
        v = rearrange(v, "... (h d) -> ... h d", d=self.head_v_dim)
        q, k = (l2norm(x).to(v.dtype) for x in (q, k))

        recurrent_state, ccq_state = split_cached_state(last_state["recurrent_state"] if last_state else None)
        q, ccq_state = self.ccq(q, k, ccq_state, output_final_state=use_cache, cu_seqlens=cu_seqlens)

        # the backbone's own read, unchanged except that q and k arrive normalised
        read = fla_gdn_layer.chunk_gated_delta_rule if mode == "chunk" else fla_gdn_layer.fused_recurrent_gated_delta_rule
        o, recurrent_state = read(
            q=q, k=k, v=v, g=self.a_proj(hidden_states), beta=self.b_proj(hidden_states),
            initial_state=recurrent_state, output_final_state=use_cache, use_qk_l2norm_in_kernel=False,
            use_gate_in_kernel=True, A_log=self.A_log, dt_bias=self.dt_bias, use_beta_sigmoid_in_kernel=True,
            allow_neg_eigval=self.allow_neg_eigval, state_v_first=True, cu_seqlens=cu_seqlens)

        update_layer_cache(module=self, past_key_values=past_key_values,
                           recurrent_state=(recurrent_state, ccq_state) if use_cache else None,
                           conv_state=conv_states, offset=q_len)

        if self.use_gate:
            g = rearrange(self.g_proj(hidden_states), "... (h d) -> ... h d", d=self.head_v_dim)
            o = self.o_norm(o, g)
        else:
            o = self.o_norm(o)
        o = self.o_proj(rearrange(o, "b t h d -> b t (h d)"))
        o = repad_hidden_states(hidden_states=o, indices=indices, batch_size=batch_size, q_len=q_len)
        return o, None, past_key_values


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
