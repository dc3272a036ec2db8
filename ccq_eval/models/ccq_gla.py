"""CCQ-GLA: fla's GLA with the curvature-conditioned read. Only the attention layer's read changes."""

from __future__ import annotations

import torch.nn.functional as F
from einops import rearrange, repeat
from fla.layers import gla as fla_gla_layer
from fla.layers.gla import GatedLinearAttention
from fla.layers.utils import get_layer_cache, repad_hidden_states, unpad_hidden_states, update_layer_cache
from fla.models.gla import GLAConfig, GLAForCausalLM, GLAModel

from ccq_eval.models.ccq_read import attach_to_layers, set_ccq_fields, short_conv_qkv, split_cached_state


class CCQGLAConfig(GLAConfig):
    model_type = "ccq_gla"

    def __init__(self, **kwargs):
        set_ccq_fields(self, kwargs)  # use_ccq, ccq_gate_bias_init, ccq_weighting, ccq_fixed_lambda, ccq_sigma_scale
        super().__init__(**kwargs)


class CCQGatedLinearAttention(GatedLinearAttention):
    """GLA's layer; with use_ccq the query entering the read is (I - lam Sigma_t) q.

    Sigma_t is computed from the k the state is written with (after short conv and feature map,
    repeated per query head under GQA). The cache's recurrent_state is (S, CCQState).
    """

    def forward(self, hidden_states, attention_mask=None, past_key_values=None, use_cache=False,
                output_attentions=False, **kwargs):
        if not self.use_ccq:
            return super().forward(hidden_states, attention_mask, past_key_values, use_cache, output_attentions,
                                   **kwargs)
        batch_size, q_len, _ = hidden_states.shape
        mode = "fused_recurrent" if q_len <= 64 else self.mode
        last_state = get_layer_cache(self, past_key_values)
        cu_seqlens = kwargs.get("cu_seqlens")
        hidden_states, indices, cu_seqlens = unpad_hidden_states(hidden_states, cu_seqlens, attention_mask, q_len)

        conv_states = None
        if self.use_short_conv:
            q, k, v, conv_states = short_conv_qkv(self, hidden_states, last_state, use_cache, cu_seqlens)
        else:
            q, k, v = self.q_proj(hidden_states), self.k_proj(hidden_states), self.v_proj(hidden_states)
        gk = self.gk_proj(hidden_states)

        q = rearrange(q, "... (h d) -> ... h d", d=self.head_k_dim)
        if self.num_kv_groups > 1:
            k, gk = (repeat(x, "... (h d) -> ... (h g) d", g=self.num_kv_groups, d=self.head_k_dim) for x in (k, gk))
            v = repeat(v, "... (h d) -> ... (h g) d", g=self.num_kv_groups, d=self.head_v_dim)
        else:
            k, gk = (rearrange(x, "... (h d) -> ... h d", d=self.head_k_dim) for x in (k, gk))
            v = rearrange(v, "... (h d) -> ... h d", d=self.head_v_dim)
        gk = F.logsigmoid(gk) / self.gate_logit_normalizer
        if self.clamp_min is not None:
            gk = gk.clamp_min(self.clamp_min)
        if self.feature_map_fn is not None:
            q, k = map(self.feature_map_fn, (q, k))

        recurrent_state, ccq_state = split_cached_state(last_state["recurrent_state"] if last_state else None)
        q, ccq_state = self.ccq(q, k, ccq_state, output_final_state=use_cache, cu_seqlens=cu_seqlens)

        # the backbone's own read, unchanged (looked up at call time so the CPU backend applies)
        if mode == "fused_recurrent":
            o, recurrent_state = fla_gla_layer.fused_recurrent_gla(
                q=q, k=k, v=v, gk=gk, initial_state=recurrent_state, output_final_state=use_cache,
                state_v_first=True, cu_seqlens=cu_seqlens)
        elif mode == "fused_chunk":
            o, recurrent_state = fla_gla_layer.fused_chunk_gla(
                q=q, k=k, v=v, g=gk, initial_state=recurrent_state, output_final_state=use_cache)
        else:
            o, recurrent_state = fla_gla_layer.chunk_gla(
                q=q, k=k, v=v, g=gk, initial_state=recurrent_state, output_final_state=use_cache,
                state_v_first=True, cu_seqlens=cu_seqlens)

        update_layer_cache(self, past_key_values,
                           recurrent_state=(recurrent_state, ccq_state) if use_cache else None,
                           conv_state=conv_states, offset=q_len)

        if self.use_output_gate:
            g = self.g_proj(hidden_states)
            if self.fuse_norm_and_gate:
                g = rearrange(g, "... (h d) -> ... h d", d=self.head_v_dim)
                o = rearrange(self.g_norm_swish_gate(o, g), "... h d -> ... (h d)")
            else:
                o = rearrange(self.g_norm(o), "... h d -> ... (h d)") * self.gate_fn(g)
        else:
            o = rearrange(self.g_norm(o), "... h d -> ... (h d)")
        o = repad_hidden_states(self.o_proj(o), indices, batch_size, q_len)
        return o, None, past_key_values


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
