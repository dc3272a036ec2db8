"""DeltaNet's read on a CPU: the delta rule is the gated delta rule with no decay (g = 0), as fla defines it.
Tested against a per-position recurrence in tests/models/test_cpu_backend_other_layers.py."""

from __future__ import annotations

import torch

from ccq_eval.ops.gated_deltanet.cpu import chunk_gated_delta_rule

def _no_decay(v: torch.Tensor) -> torch.Tensor:
    return torch.zeros(v.shape[:3], dtype=torch.float32, device=v.device)


def _check_beta(beta: torch.Tensor) -> None:
    if beta.dim() != 3:  # fla's recurrent kernel also takes a per-channel beta [B, T, H, V]; no layer uses it
        raise NotImplementedError("ccq-eval's CPU backend: the delta rule with a per-channel beta")


# --- the delta rule: S_t = S_{t-1} (I - b_t k_t k_t^T) + b_t k_t v_t^T (K-first state) -----------------

def chunk_delta_rule(q, k, v, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None, **kwargs):
    _check_beta(beta)
    return chunk_gated_delta_rule(q, k, v, _no_decay(v), beta, scale=scale, initial_state=initial_state,
                                          output_final_state=output_final_state,
                                          use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, cu_seqlens=cu_seqlens)


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None, initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False, cu_seqlens=None, **kwargs):
    if beta is None:
        beta = torch.ones(v.shape[:3], dtype=torch.float32, device=v.device)
    return chunk_delta_rule(q, k, v, beta, scale=scale, initial_state=initial_state,
                            output_final_state=output_final_state,
                            use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, cu_seqlens=cu_seqlens)
