"""RetNet's multi-scale retention on a CPU, every mode its layer can pick: simple GLA with a fixed per-head decay
gamma_h = 1 - 2^(-5 - h), the decay broadcast over the key dimension of GLA's chunked form."""

from __future__ import annotations

import torch

from ccq_eval.ops.gla.cpu import chunk_gla
from ccq_eval.ops.shared_cpu_forms import reject

# --- retention: S_t = gamma_h S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t ----------------------------

def retention_log_decay(num_heads: int, device=None) -> torch.Tensor:
    """log gamma_h, gamma_h = 1 - 2^(-5 - h): RetNet's multi-scale decays, as fla's retention ops set them."""
    return (1 - 2.0 ** (-5.0 - torch.arange(num_heads, dtype=torch.float, device=device))).log()


def _retention_gate(q: torch.Tensor) -> torch.Tensor:
    B, T, H, K = q.shape
    return retention_log_decay(H, q.device)[None, None, :, None].expand(B, T, H, K)


def chunk_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
                    state_v_first=False, **kwargs):
    return chunk_gla(q, k, v, _retention_gate(q), scale=scale, initial_state=initial_state,
                             output_final_state=output_final_state, state_v_first=state_v_first,
                             cu_seqlens=cu_seqlens)


def fused_recurrent_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, reverse=False,
                              state_v_first=False, cu_seqlens=None, **kwargs):
    reject("fused_recurrent_retention", reverse=reverse)
    return chunk_retention(q, k, v, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                           state_v_first=state_v_first, cu_seqlens=cu_seqlens)


def fused_chunk_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None):
    return chunk_retention(q, k, v, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                           cu_seqlens=cu_seqlens)


def parallel_retention(q, k, v, scale=None, output_attentions=False, cu_seqlens=None):
    reject("parallel_retention", output_attentions=output_attentions)
    o, _ = chunk_retention(q, k, v, scale=scale, cu_seqlens=cu_seqlens)
    return o, None
