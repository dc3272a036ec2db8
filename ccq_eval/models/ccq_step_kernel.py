"""CCQ's decoding step as one Triton kernel: Welford's update of the key statistics and the contracted query in one
pass over Sigma per head (read once, written once, in place), float32 arithmetic whatever the model's dtype.

For one token a row, ``n1 = n + 1``, ``a = n / n1``, ``delta = k - mu``:
``Sigma_1 = a (Sigma + delta delta^T / n1)``, ``Sigma_1 q = a (Sigma q + delta (delta . q) / n1)``,
``mu_1 = mu + delta / n1``, ``q' = q - lam Sigma_1 q`` (divided by ``tr Sigma_1 + eps`` under the 'trace' scale).
The torch form (``ccq.contract_query_step``) takes about ten launches and passes over Sigma twice; this one launch
reads each row block of Sigma, adds its share of the update, writes it back and keeps the row's matvec. Programs
share the old mean (every one reads all of it), so the new mean goes to a tensor of its own, and the 'trace' scale's
old trace is summed before the launch, as no program can read the diagonal while others write it."""

from __future__ import annotations

import torch
import triton
import triton.language as tl


@triton.jit
def _ccq_step_kernel(q, k, lam, count, mean, cov, old_trace, q_out, mean_out, eps, H: tl.constexpr,
                     D: tl.constexpr, BD: tl.constexpr, BR: tl.constexpr, TRACE: tl.constexpr):
    i_r, i_bh = tl.program_id(0), tl.program_id(1)
    i_b = i_bh // H
    o_d = tl.arange(0, BD)
    o_r = i_r * BR + tl.arange(0, BR)
    m_d, m_r = o_d < D, o_r < D
    b_q = tl.load(q + i_bh * D + o_d, mask=m_d, other=0).to(tl.float32)
    b_delta = tl.load(k + i_bh * D + o_d, mask=m_d, other=0).to(tl.float32) - tl.load(mean + i_bh * D + o_d,
                                                                                        mask=m_d, other=0)
    n = tl.load(count + i_b).to(tl.float32)
    n1 = n + 1.0
    a = n / n1
    delta_q = tl.sum(b_delta * b_q)
    mean_r = tl.load(mean + i_bh * D + o_r, mask=m_r, other=0)
    delta_r = tl.load(k + i_bh * D + o_r, mask=m_r, other=0).to(tl.float32) - mean_r
    p_cov = cov + i_bh * D * D + o_r[:, None] * D + o_d[None, :]
    m_cov = m_r[:, None] & m_d[None, :]
    b_cov = tl.load(p_cov, mask=m_cov, other=0)
    sigma_q = a * (tl.sum(b_cov * b_q[None, :], axis=1) + delta_r / n1 * delta_q)
    tl.store(p_cov, a * (b_cov + (delta_r / n1)[:, None] * b_delta[None, :]), mask=m_cov)
    if TRACE:
        trace = a * (tl.load(old_trace + i_bh) + tl.sum(b_delta * b_delta) / n1)
        sigma_q = sigma_q / (tl.maximum(trace, 0.0) + eps)
    q_r = tl.load(q + i_bh * D + o_r, mask=m_r, other=0).to(tl.float32)
    q_clean = q_r - tl.load(lam + i_bh).to(tl.float32) * sigma_q
    tl.store(q_out + i_bh * D + o_r, q_clean.to(q_out.dtype.element_ty), mask=m_r)
    tl.store(mean_out + i_bh * D + o_r, mean_r + delta_r / n1, mask=m_r)


def takes(q: torch.Tensor, state) -> bool:
    """One token a row with float32 statistics to carry, no gradients: what the kernel computes."""
    return (state is not None and not torch.is_grad_enabled() and q.dtype != torch.float64
            and state.cov.dtype == torch.float32 and state.mean.dtype == torch.float32 and state.cov.is_contiguous()
            and state.mean.is_contiguous())


def contract_query_step_fused(q, k, lam, state, trace_scale: bool, eps: float):
    """``(q' [B, 1, H, D] in q.dtype, new mean [B, H, D], new count [B])``; Sigma updated in place."""
    B, _, H, D = q.shape
    q_out = torch.empty_like(q)
    mean_out = torch.empty_like(state.mean)
    old_trace = torch.diagonal(state.cov, dim1=-2, dim2=-1).sum(-1) if trace_scale else state.mean
    BD = triton.next_power_of_2(D)
    BR = max(1, min(BD, 4096 // BD))
    _ccq_step_kernel[(triton.cdiv(D, BR), B * H)](
        q.contiguous(), k.contiguous(), lam.contiguous(), state.count, state.mean, state.cov, old_trace, q_out,
        mean_out, eps, H=H, D=D, BD=BD, BR=BR, TRACE=trace_scale)
    return q_out, mean_out, state.count + 1
