"""Torch implementations of the Triton-only functions of fla's other families (DeltaNet, RetNet,
HGRN2, Mamba2), with fla's signatures, built on the chunked forms in ``cpu_ops``.

Each is the special case fla itself defines it as: the delta rule is the gated delta rule with no
decay (g = 0); retention is simple GLA with a fixed per-head decay gamma_h = 1 - 2^(-5 - h), the
decay broadcast over the key dimension of GLA's chunked form; HGRN2's read is GLA with its state
V-first. Tested against per-position recurrences and fla's own ``rms_norm_ref`` in
``tests/models/test_cpu_backend_other_layers.py``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ccq_eval.models import cpu_ops


def _no_decay(v: torch.Tensor) -> torch.Tensor:
    return torch.zeros(v.shape[:3], dtype=torch.float32, device=v.device)


def _check_beta(beta: torch.Tensor) -> None:
    if beta.dim() != 3:  # fla's recurrent kernel also takes a per-channel beta [B, T, H, V]; no layer uses it
        raise NotImplementedError("ccq-eval's CPU backend: the delta rule with a per-channel beta")


# --- the delta rule: S_t = S_{t-1} (I - b_t k_t k_t^T) + b_t k_t v_t^T (K-first state) -----------------

def chunk_delta_rule(q, k, v, beta, scale=None, initial_state=None, output_final_state=False,
                     use_qk_l2norm_in_kernel=False, cu_seqlens=None, cu_seqlens_cpu=None, **kwargs):
    _check_beta(beta)
    return cpu_ops.chunk_gated_delta_rule(q, k, v, _no_decay(v), beta, scale=scale, initial_state=initial_state,
                                          output_final_state=output_final_state,
                                          use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, cu_seqlens=cu_seqlens)


def fused_recurrent_delta_rule(q, k, v, beta=None, scale=None, initial_state=None, output_final_state=False,
                               use_qk_l2norm_in_kernel=False, cu_seqlens=None, **kwargs):
    if beta is None:
        beta = torch.ones(v.shape[:3], dtype=torch.float32, device=v.device)
    return chunk_delta_rule(q, k, v, beta, scale=scale, initial_state=initial_state,
                            output_final_state=output_final_state,
                            use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, cu_seqlens=cu_seqlens)


# --- retention: S_t = gamma_h S_{t-1} + k_t v_t^T, o_t = scale * S_t^T q_t ----------------------------

def retention_log_decay(num_heads: int, device=None) -> torch.Tensor:
    """log gamma_h, gamma_h = 1 - 2^(-5 - h): RetNet's multi-scale decays, as fla's retention ops set them."""
    return (1 - 2.0 ** (-5.0 - torch.arange(num_heads, dtype=torch.float, device=device))).log()


def _retention_gate(q: torch.Tensor) -> torch.Tensor:
    B, T, H, K = q.shape
    return retention_log_decay(H, q.device)[None, None, :, None].expand(B, T, H, K)


def chunk_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None,
                    state_v_first=False, **kwargs):
    return cpu_ops.chunk_gla(q, k, v, _retention_gate(q), scale=scale, initial_state=initial_state,
                             output_final_state=output_final_state, state_v_first=state_v_first,
                             cu_seqlens=cu_seqlens)


def fused_recurrent_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, reverse=False,
                              state_v_first=False, cu_seqlens=None, **kwargs):
    cpu_ops._reject("fused_recurrent_retention", reverse=reverse)
    return chunk_retention(q, k, v, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                           state_v_first=state_v_first, cu_seqlens=cu_seqlens)


def fused_chunk_retention(q, k, v, scale=None, initial_state=None, output_final_state=False, cu_seqlens=None):
    return chunk_retention(q, k, v, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                           cu_seqlens=cu_seqlens)


def parallel_retention(q, k, v, scale=None, output_attentions=False, cu_seqlens=None):
    cpu_ops._reject("parallel_retention", output_attentions=output_attentions)
    o, _ = chunk_retention(q, k, v, scale=scale, cu_seqlens=cu_seqlens)
    return o, None


# --- norms fused with a linear layer or a gate ------------------------------------------------------------

def rms_norm_linear(x, norm_weight, norm_bias, linear_weight, linear_bias, residual=None, eps=1e-5, prenorm=False,
                    residual_in_fp32=False):
    """HGRN2's output: RMSNorm, then the output projection (fla's kernel fuses the two)."""
    y, res_out = cpu_ops._rms_norm_work(x, norm_weight, norm_bias, residual, eps, residual_in_fp32)
    out = F.linear(y.to(x.dtype).to(linear_weight.dtype), linear_weight, linear_bias)
    return (out, res_out) if prenorm else out


def rmsnorm_fn(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
    """Mamba2's gated RMSNorm, per group of ``group_size`` channels; the SiLU gate z before or after."""
    f = cpu_ops._work_dtype(x)
    xf = x.to(f)
    gate = F.silu(z.to(f)) if z is not None else None
    if gate is not None and not norm_before_gate:
        xf = xf * gate
    size = group_size or x.shape[-1]
    groups = xf.unflatten(-1, (x.shape[-1] // size, size))
    y = (groups * torch.rsqrt(groups.square().mean(-1, keepdim=True) + eps)).flatten(-2) * weight.to(f)
    if bias is not None:
        y = y + bias.to(f)
    if gate is not None and norm_before_gate:
        y = y * gate
    return y.to(x.dtype)
