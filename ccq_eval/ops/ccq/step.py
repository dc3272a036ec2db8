"""CCQ's decoding step: one token a row, Welford's update of the constant-size statistics. The torch form
(``torch_step``, about ten launches, two passes over Sigma; the fused step's reference in float64), and the Triton
form, one kernel where Triton runs, once it has agreed with the torch form on the device (ops/trust.py).

CCQ's decoding step as one Triton kernel: Welford's update of the key statistics and the contracted query in one
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

from ccq_eval.ops import trust
from ccq_eval.ops.ccq.state import CCQState, TRACE_EPS, apply_trace_scale, check_sigma_scale, stat_dtype, statistics
from ccq_eval.ops.fp32_matmul import ieee_fp32
from ccq_eval.ops.in_place import runs_triton


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


def takes_fused_step(q: torch.Tensor, state) -> bool:
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


def contract_query_step(
    q: torch.Tensor,
    k: torch.Tensor,
    lam: torch.Tensor,
    state: CCQState | None,
    sigma_scale: str = "none",
) -> tuple[torch.Tensor, CCQState]:
    """One decoding token: ``q, k [B, 1, H, D]``, ``lam [B, 1, H]``; Welford update, O(H D^2).

    Sigma is the largest tensor a decoding step touches, so it is read by the matvec and updated in place (two
    passes; without grad the returned state holds the same tensor as ``state``, whose ``cov`` moves on with it):
    Sigma_1 = a (Sigma + delta delta^T / n_1), a = n / n_1, and Sigma_1 q = a (Sigma q + delta (delta . q) / n_1)."""
    check_sigma_scale(sigma_scale)
    B, T, H, D = q.shape
    if T != 1 or k.shape != q.shape or lam.shape != (B, 1, H):
        raise ValueError(f"contract_query_step takes one token: q {tuple(q.shape)}, k {tuple(k.shape)}, lam {tuple(lam.shape)}")
    if _fused_step(q, k, lam, state, sigma_scale):
        q_clean, mean1, count = contract_query_step_fused(q, k, lam, state, sigma_scale == "trace", TRACE_EPS)
        return q_clean, CCQState(count=count, mean=mean1, cov=state.cov)
    return torch_step(q, k, lam, state, sigma_scale)


def torch_step(q, k, lam, state: CCQState | None, sigma_scale: str) -> tuple[torch.Tensor, CCQState]:
    """contract_query_step in torch ops (the fused step's reference, in float64)."""
    B, _, H, D = q.shape
    f = stat_dtype(q)
    qf, kf, lamf = q[:, 0].to(f), k[:, 0].to(f), lam[:, 0].to(f)
    n, mean, cov = statistics(state, B, H, D, f, q.device)
    n1 = (n + 1).view(B, 1, 1)
    a = n.view(B, 1, 1) / n1
    delta = kf - mean
    mean1 = mean + delta / n1
    scaled = delta / n1
    with ieee_fp32():  # one matvec a step: no TF32 (a process may allow it)
        sigma_q = (cov @ qf.unsqueeze(-1)).squeeze(-1)
    sigma_q = a * (sigma_q + scaled * (delta * qf).sum(-1, keepdim=True))
    cov1 = cov if not torch.is_grad_enabled() else cov.clone()
    cov1.addcmul_(scaled.unsqueeze(-1), delta.unsqueeze(-2)).mul_(a.unsqueeze(-1))
    if sigma_scale == "trace":
        sigma_q = apply_trace_scale(sigma_q, torch.diagonal(cov1, dim1=-2, dim2=-1).sum(-1))
    q_clean = (qf - lamf.unsqueeze(-1) * sigma_q).to(q.dtype).unsqueeze(1)
    count = (state.count if state is not None else torch.zeros(B, dtype=torch.int64, device=q.device)) + 1
    return q_clean, CCQState(count=count, mean=mean1, cov=cov1)


def _fused_step(q, k, lam, state: CCQState | None, sigma_scale: str) -> bool:
    """The one-kernel step (``contract_query_step_fused`` above) where Triton runs: on a GPU, and on the CPU under Triton's
    interpreter when fla's kernels are asked for, once it has agreed with the torch step in float64 on this device
    (models/trust.py); the torch form elsewhere and with gradients."""
    if not (runs_triton(q) and takes_fused_step(q, state)):
        return False
    return trust.trusted("CCQ step", q, True, {"H": q.shape[2], "D": q.shape[3]}, {"sigma_scale": sigma_scale},
                                lambda: _fused_step_trial(q, k, lam, state, sigma_scale))


def _fused_step_trial(q, k, lam, state: CCQState, sigma_scale: str) -> float:
    """The fused step on the call's first rows beside the torch step in float64: the largest relative difference of
    the contracted query, the new mean and Sigma (which the fused step must write where it lies)."""
    rows = min(trust.TRIAL_ROWS, q.shape[0])
    small = trust.leading_rows({"q": q, "k": k, "lam": lam, "count": state.count, "mean": state.mean,
                                       "cov": state.cov}, rows)
    own_state = CCQState(small["count"], small["mean"], small["cov"])
    expected_q, expected = torch_step(small["q"].double(), small["k"].double(), small["lam"].double(),
                                       CCQState(small["count"], small["mean"].double(), small["cov"].double()),
                                       sigma_scale)
    got_q, mean1, _ = contract_query_step_fused(small["q"], small["k"], small["lam"], own_state,
                                                sigma_scale == "trace", TRACE_EPS)
    return max(trust.relative_difference(got_q, expected_q), trust.relative_difference(mean1, expected.mean),
               trust.relative_difference(own_state.cov, expected.cov))
