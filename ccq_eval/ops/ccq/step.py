"""CCQ's decoding step: one token a row, Welford's update of the constant-size statistics. The torch form
(``torch_step`` and, from a layer's raw q and k, ``reference_read_step``: the L2 norms, the gate and about ten more
launches, two passes over Sigma; the fused step's reference in float64), and the Triton form, one kernel a layer where
Triton runs, once it has agreed with the torch form on the device (ops/trust.py).

CCQ's decoding step as one Triton kernel: Gated DeltaNet's L2 norms of q and k (the normalised k written for the
backbone's step to read), the gate ``lam = sigmoid(q . w_h + b_h)``, Welford's update of the key statistics, the
contracted query and the count, in one pass over Sigma per head (read once, written once, in place), float32
arithmetic whatever the model's dtype. Every program loads whole q and k rows already, so the norms and the gate cost
it a few more sums.

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
from ccq_eval.ops.ccq.state import (TRACE_EPS, CCQState, ReadGate, apply_trace_scale, check_sigma_scale, stat_dtype,
                                    statistics)
from ccq_eval.ops.fp32_matmul import ieee_fp32
from ccq_eval.ops.in_place import runs_triton
from ccq_eval.ops.shared_cpu_forms import l2norm

L2NORM_EPS = 1e-6  # fla's l2norm: x / sqrt(|x|^2 + eps)
# where the kernel's lam comes from: a tensor given ([B, 1, H]), the gate's weights, one fixed value
LAM_GIVEN, LAM_GATE, LAM_FIXED = 0, 1, 2


@triton.jit
def _ccq_step_kernel(q, k, lam, gate_w, gate_b, fixed_lam, count, mean, cov, old_trace, q_out, k_out, mean_out,
                     count_out, eps, norm_eps, H: tl.constexpr, D: tl.constexpr, BD: tl.constexpr, BR: tl.constexpr,
                     TRACE: tl.constexpr, NORM: tl.constexpr, LAM: tl.constexpr):
    i_r, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_d = tl.arange(0, BD)
    o_r = i_r * BR + tl.arange(0, BR)
    m_d, m_r = o_d < D, o_r < D
    b_q = tl.load(q + i_bh * D + o_d, mask=m_d, other=0).to(tl.float32)
    b_k = tl.load(k + i_bh * D + o_d, mask=m_d, other=0).to(tl.float32)
    q_r = tl.load(q + i_bh * D + o_r, mask=m_r, other=0).to(tl.float32)
    k_r = tl.load(k + i_bh * D + o_r, mask=m_r, other=0).to(tl.float32)
    if NORM:  # fla's l2norm in float32, rounded to the read's dtype as the torch form rounds it
        q_scale = 1.0 / tl.sqrt(tl.sum(b_q * b_q) + norm_eps)
        k_scale = 1.0 / tl.sqrt(tl.sum(b_k * b_k) + norm_eps)
        b_q = (b_q * q_scale).to(q_out.dtype.element_ty).to(tl.float32)
        b_k = (b_k * k_scale).to(k_out.dtype.element_ty).to(tl.float32)
        q_r = (q_r * q_scale).to(q_out.dtype.element_ty).to(tl.float32)
        k_r = (k_r * k_scale).to(k_out.dtype.element_ty).to(tl.float32)
        tl.store(k_out + i_bh * D + o_r, k_r.to(k_out.dtype.element_ty), mask=m_r)
    if LAM == 1:  # LAM_GATE (a constexpr: the names above are the wrapper's)
        w = tl.load(gate_w + i_h * D + o_d, mask=m_d, other=0).to(tl.float32)
        b_lam = tl.sigmoid(tl.sum(b_q * w) + tl.load(gate_b + i_h).to(tl.float32))
    elif LAM == 0:  # LAM_GIVEN
        b_lam = tl.load(lam + i_bh).to(tl.float32)
    else:
        b_lam = fixed_lam
    b_delta = b_k - tl.load(mean + i_bh * D + o_d, mask=m_d, other=0)
    n_int = tl.load(count + i_b)
    n = n_int.to(tl.float32)
    n1 = n + 1.0
    a = n / n1
    delta_q = tl.sum(b_delta * b_q)
    mean_r = tl.load(mean + i_bh * D + o_r, mask=m_r, other=0)
    delta_r = k_r - mean_r
    p_cov = cov + i_bh * D * D + o_r[:, None] * D + o_d[None, :]
    m_cov = m_r[:, None] & m_d[None, :]
    b_cov = tl.load(p_cov, mask=m_cov, other=0)
    sigma_q = a * (tl.sum(b_cov * b_q[None, :], axis=1) + delta_r / n1 * delta_q)
    tl.store(p_cov, a * (b_cov + (delta_r / n1)[:, None] * b_delta[None, :]), mask=m_cov)
    if TRACE:
        trace = a * (tl.load(old_trace + i_bh) + tl.sum(b_delta * b_delta) / n1)
        sigma_q = sigma_q / (tl.maximum(trace, 0.0) + eps)
    q_clean = q_r - b_lam * sigma_q
    tl.store(q_out + i_bh * D + o_r, q_clean.to(q_out.dtype.element_ty), mask=m_r)
    tl.store(mean_out + i_bh * D + o_r, mean_r + delta_r / n1, mask=m_r)
    if (i_r == 0) & (i_h == 0):  # one program a row moves its count on
        tl.store(count_out + i_b, n_int + 1)


def takes_fused_step(q: torch.Tensor, state) -> bool:
    """One token a row with float32 statistics to carry, no gradients: what the kernel computes."""
    return (state is not None and not torch.is_grad_enabled() and q.dtype != torch.float64
            and state.cov.dtype == torch.float32 and state.mean.dtype == torch.float32 and state.cov.is_contiguous()
            and state.mean.is_contiguous())


def lam_source(lam: torch.Tensor | ReadGate) -> str:
    """Where a read's lam comes from, as a verdict's options name it: "given", "gate" or "fixed"."""
    if isinstance(lam, torch.Tensor):
        return "given"
    return "fixed" if lam.weight is None else "gate"


def lam_arguments(lam: torch.Tensor | ReadGate, q: torch.Tensor) -> tuple:
    """(mode, lam tensor, gate weight, gate bias, fixed value) as the kernel takes them (unused ones a placeholder)."""
    if isinstance(lam, torch.Tensor):
        return LAM_GIVEN, lam.contiguous(), q, q, 0.0
    if lam.weight is None:
        return LAM_FIXED, q, q, q, float(lam.fixed)
    return LAM_GATE, q, lam.weight.contiguous(), lam.bias.contiguous(), 0.0


def contract_query_step_fused(q, k, lam: torch.Tensor | ReadGate, state, trace_scale: bool, eps: float,
                              normalize: bool = False, read_dtype: torch.dtype | None = None):
    """``(q' [B, 1, H, D], k as the read takes it [B, 1, H, D], new mean [B, H, D], new count [B])``, one launch;
    Sigma updated in place. ``lam``: a tensor ``[B, 1, H]``, or the gate (ReadGate) the kernel evaluates itself;
    ``normalize``: q and k L2-normalised first and rounded to ``read_dtype`` (Gated DeltaNet's), that k returned."""
    B, _, H, D = q.shape
    read_dtype = read_dtype if normalize and read_dtype is not None else q.dtype
    q_out = torch.empty(q.shape, dtype=read_dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=read_dtype, device=k.device) if normalize else k
    mean_out = torch.empty_like(state.mean)
    count_out = torch.empty_like(state.count)
    old_trace = torch.diagonal(state.cov, dim1=-2, dim2=-1).sum(-1) if trace_scale else state.mean
    mode, lam_t, weight, bias, fixed = lam_arguments(lam, q)
    BD = triton.next_power_of_2(D)
    BR = max(1, min(BD, 4096 // BD))
    _ccq_step_kernel[(triton.cdiv(D, BR), B * H)](
        q.contiguous(), k.contiguous(), lam_t, weight, bias, fixed, state.count, state.mean, state.cov, old_trace,
        q_out, k_out, mean_out, count_out, eps, L2NORM_EPS, H=H, D=D, BD=BD, BR=BR, TRACE=trace_scale,
        NORM=normalize, LAM=mode)
    return q_out, k_out, mean_out, count_out


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
    if _fused_step(q, k, lam, state, sigma_scale, False, q.dtype):
        q_clean, _, mean1, count = contract_query_step_fused(q, k, lam, state, sigma_scale == "trace", TRACE_EPS)
        return q_clean, CCQState(count=count, mean=mean1, cov=state.cov)
    return torch_step(q, k, lam, state, sigma_scale)


def contract_read_step(q: torch.Tensor, k: torch.Tensor, gate: ReadGate, state: CCQState | None,
                       sigma_scale: str = "none", normalize: bool = False,
                       read_dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor, CCQState]:
    """A layer's decoding step from its raw ``q, k [B, 1, H, D]``: ``(q', k as the read takes it, new statistics)``.
    ``gate`` gives lam; ``normalize`` (Gated DeltaNet's) L2-normalises q and k first and rounds them to
    ``read_dtype``, and the backbone's step reads that k. One kernel where Triton runs (``reference_read_step``'s
    launches otherwise)."""
    check_sigma_scale(sigma_scale)
    B, T, H, D = q.shape
    if T != 1 or k.shape != q.shape:
        raise ValueError(f"contract_read_step takes one token: q {tuple(q.shape)}, k {tuple(k.shape)}")
    read_dtype = read_dtype or q.dtype
    if _fused_step(q, k, gate, state, sigma_scale, normalize, read_dtype):
        q_clean, k_read, mean1, count = contract_query_step_fused(q, k, gate, state, sigma_scale == "trace",
                                                                  TRACE_EPS, normalize, read_dtype)
        return q_clean, k_read, CCQState(count=count, mean=mean1, cov=state.cov)
    return reference_read_step(q, k, gate, state, sigma_scale, normalize, read_dtype)


def normalized(q: torch.Tensor, k: torch.Tensor, read_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """Gated DeltaNet's q and k as its read takes them: fla's l2norm, in the read's dtype."""
    return l2norm(q).to(read_dtype), l2norm(k).to(read_dtype)


def reference_read_step(q, k, gate: ReadGate, state: CCQState | None, sigma_scale: str, normalize: bool,
                        read_dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor, CCQState]:
    """contract_read_step in torch ops: the norms, the gate, then ``torch_step``."""
    if normalize:
        q, k = normalized(q, k, read_dtype)
    q_clean, new = torch_step(q, k, gate.lam(q), state, sigma_scale)
    return q_clean, k, new


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


def _fused_step(q, k, lam, state: CCQState | None, sigma_scale: str, normalize: bool, read_dtype) -> bool:
    """The one-kernel step (``contract_query_step_fused`` above) where Triton runs: on a GPU, and on the CPU under Triton's
    interpreter when fla's kernels are asked for, once it has agreed with the torch step in float64 on this device
    (models/trust.py); the torch form elsewhere and with gradients."""
    if not (runs_triton(q) and takes_fused_step(q, state)):
        return False
    options = {"sigma_scale": sigma_scale, "lam": lam_source(lam), "normalize": normalize,
               "read_dtype": str(read_dtype).removeprefix("torch.")}
    return trust.trusted("CCQ step", q, True, {"H": q.shape[2], "D": q.shape[3]}, options,
                         lambda: _fused_step_trial(q, k, lam, state, sigma_scale, normalize, read_dtype))


def _fused_step_trial(q, k, lam, state: CCQState, sigma_scale: str, normalize: bool, read_dtype) -> float:
    """The fused step on the call's first rows beside the torch step in float64 (from the inputs the kernel reads:
    normalised q and k rounded to the read's dtype as it rounds them): the largest relative difference of the
    contracted query, the k it hands the read, the new mean and Sigma (which it must write where it lies); the count
    must be exact."""
    rows = min(trust.TRIAL_ROWS, q.shape[0])
    given = {"q": q, "k": k, "count": state.count, "mean": state.mean, "cov": state.cov}
    small = trust.leading_rows({**given, **({"lam": lam} if isinstance(lam, torch.Tensor) else {})}, rows)
    small_lam = small.get("lam", lam)
    own_state = CCQState(small["count"], small["mean"], small["cov"])
    q_in, k_in = normalized(small["q"], small["k"], read_dtype) if normalize else (small["q"], small["k"])
    lam64 = small_lam.double() if isinstance(small_lam, torch.Tensor) else small_lam.lam(q_in).double()
    expected_q, expected = torch_step(q_in.double(), k_in.double(), lam64,
                                      CCQState(small["count"], small["mean"].double(), small["cov"].double()),
                                      sigma_scale)
    got_q, got_k, mean1, count1 = contract_query_step_fused(small["q"], small["k"], small_lam, own_state,
                                                            sigma_scale == "trace", TRACE_EPS, normalize, read_dtype)
    if not torch.equal(count1, expected.count):
        return float("inf")
    return max(trust.relative_difference(got_q, expected_q), trust.relative_difference(got_k, k_in.double()),
               trust.relative_difference(mean1, expected.mean), trust.relative_difference(own_state.cov, expected.cov))
