"""CCQ's read over packed sequences as one Triton pass (fla's ``fused_chunk`` shape): a program per sequence, head
and block of BV output columns walks its sequence chunk by chunk, the chunk state ``P[:, block] = sum kc kc^T`` on
chip, and writes the contracted queries, Gated DeltaNet's normalised keys and the final statistics. Gated DeltaNet's
L2 norms of q and k, the gate ``lam = sigmoid(q . w_h + b_h)``, the centre (the carried mean, or the mean of the
sequence's first ``chunk_size`` keys) and the carried statistics are all read inside it: one launch a layer.

What each program computes, per chunk of BT tokens (``kc`` the keys shifted by the centre, zero where no token sits):
``A = tril(q kc^T)``, ``second_q = q P + A kc[:, block]`` (P symmetric, so ``q P`` is ``P q``), the key sums and
squared norms by prefix sums, then ``P += kc^T kc[:, block]``: the read ``contracted_read`` computes from them
(ops/ccq/state.py), every dot at float32 accuracy (three TF32 products on the tensor cores, DOT below), never one
TF32 pass. The sums over the whole key (``A``, ``q . key_sum``, ``|key_sum|^2``) every program of a head computes
for itself: BV columns share them at the price of a few dots.
Chunks start at each sequence's first token, so none crosses a boundary; empty sequences write their carried state.

packed.py's composition (torch ops over chunk slots) is this pass's reference; a process takes this pass only once it
has agreed with that reference in float64 on a few of the call's own sequences on its device (ops/trust.py)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ccq_eval.ops.ccq.state import CCQState
from ccq_eval.ops.ccq.step import L2NORM_EPS, lam_arguments

# tokens a chunk, output columns a program (D / BV programs a head: 8 at GLA-1.3B's d_k 256, 4 at Gated DeltaNet's
# 128) and warps: the [BT, D] tiles of q and k and the [D, BV] state fit a program's registers best of the shapes
# compiled for sm_90 (ptxas, Triton 3.6 and 3.9: 255 registers and 1.2-1.8 KB of spills a thread at D = 256, 0.1-0.5
# KB at 128; 4 warps or 32-token chunks spill twice as much)
BT, BV, NUM_WARPS = 16, 32, 8
# the dots' precision: fp32 accuracy from three TF32 products on the tensor cores (a = hi + lo, a b ~ hi hi + hi lo +
# lo hi; relative error ~1e-6 on fp32 inputs). IEEE fp32 ("ieee") runs on the CUDA cores and, compiled for sm_90,
# leaves ptxas 32 registers and 3-13 KB of spills a thread; one TF32 pass ("tf32") errs by 1e-3, above FP32_BOUND.
DOT: tl.constexpr = tl.constexpr("tf32x3")


@triton.jit
def _rows(x, first, o_t, rows_left, i_h, H: tl.constexpr, D: tl.constexpr, cols, m_cols):
    """The tile ``x[first + o_t, i_h, cols]`` (float32), zero past the sequence's last token."""
    m_t = o_t < rows_left
    p = x + ((first + o_t).to(tl.int64)[:, None] * H + i_h) * D + cols[None, :]
    return tl.load(p, mask=m_t[:, None] & m_cols[None, :], other=0).to(tl.float32)


@triton.jit
def _scaled(x, scale, NORM: tl.constexpr, dtype: tl.constexpr):
    """fla's l2norm of rows whose 1 / sqrt(|x|^2 + eps) is ``scale``, rounded to the read's dtype, as the torch form
    rounds it; ``x`` itself without the norms."""
    if NORM:
        return (x * scale[:, None]).to(dtype).to(tl.float32)
    return x


@triton.jit
def _row_scale(x, norm_eps):
    return 1.0 / tl.sqrt(tl.sum(x * x, axis=1) + norm_eps)


@triton.jit
def _first_keys_mean(k, bos, length, o_t, i_h, o_d, m_d, o_v, m_v, norm_eps, H: tl.constexpr, D: tl.constexpr,
                     BD: tl.constexpr, BV: tl.constexpr, BT: tl.constexpr, CENTRE: tl.constexpr, NORM: tl.constexpr,
                     dtype: tl.constexpr):
    """The mean of the sequence's first CENTRE keys (normalised first), over the whole key and this program's
    columns (0 for an empty sequence)."""
    total = tl.zeros([BD], dtype=tl.float32)
    total_v = tl.zeros([BV], dtype=tl.float32)
    for start in range(0, CENTRE, BT):
        left = tl.minimum(length, CENTRE) - start
        b_k = _rows(k, bos + start, o_t, left, i_h, H, D, o_d, m_d)
        k_scale = _row_scale(b_k, norm_eps)
        total += tl.sum(_scaled(b_k, k_scale, NORM, dtype), axis=0)
        total_v += tl.sum(_scaled(_rows(k, bos + start, o_t, left, i_h, H, D, o_v, m_v), k_scale, NORM, dtype), axis=0)
    taken = tl.maximum(tl.minimum(length, CENTRE), 1).to(tl.float32)
    return total / taken, total_v / taken


@triton.jit
def _carried(count, mean, cov, i_n, i_nh, o_d, m_d, o_v, m_v, m_dv, centre, centre_v, D: tl.constexpr,
             BD: tl.constexpr, BV: tl.constexpr, HAS_STATE: tl.constexpr):
    """(keys seen before, the centre, this program's columns of the carried moment about it ``n0 Sigma``, its trace
    in float64): a sequence that has seen keys is centred on their mean, so nothing else of it is carried."""
    b_P = tl.zeros([BD, BV], dtype=tl.float32)
    sq_carry = tl.zeros([1], dtype=tl.float64)
    n0_int = tl.zeros([1], dtype=tl.int64).sum()
    if HAS_STATE:
        n0_int = tl.load(count + i_n)
        centre = tl.where(n0_int > 0, tl.load(mean + i_nh * D + o_d, mask=m_d, other=0), centre)
        centre_v = tl.where(n0_int > 0, tl.load(mean + i_nh * D + o_v, mask=m_v, other=0), centre_v)
        b_P = n0_int.to(tl.float32) * tl.load(cov + i_nh * D * D + o_d[:, None] * D + o_v[None, :], mask=m_dv, other=0)
        diagonal = tl.load(cov + i_nh * D * D + o_d * (D + 1), mask=m_d, other=0)
        sq_carry += tl.sum(n0_int.to(tl.float32) * diagonal).to(tl.float64)
    return n0_int, centre, centre_v, b_P, sq_carry


@triton.jit
def _chunk_rows(q, k, k_out, first, left, o_t, i_h, o_d, m_d, o_v, m_v, norm_eps, H: tl.constexpr, D: tl.constexpr,
                NORM: tl.constexpr, dtype: tl.constexpr):
    """A chunk's q and k, whole rows and this program's columns, as the read takes them: Gated DeltaNet's norms (the
    same scale a row, so the columns round exactly as the whole rows do), its normalised k written for the backbone."""
    b_q = _rows(q, first, o_t, left, i_h, H, D, o_d, m_d)
    b_k = _rows(k, first, o_t, left, i_h, H, D, o_d, m_d)
    b_qv = _rows(q, first, o_t, left, i_h, H, D, o_v, m_v)
    b_kv = _rows(k, first, o_t, left, i_h, H, D, o_v, m_v)
    if NORM:
        q_scale, k_scale = _row_scale(b_q, norm_eps), _row_scale(b_k, norm_eps)
        b_q, b_qv = _scaled(b_q, q_scale, NORM, dtype), _scaled(b_qv, q_scale, NORM, dtype)
        b_k, b_kv = _scaled(b_k, k_scale, NORM, dtype), _scaled(b_kv, k_scale, NORM, dtype)
        p_k = k_out + ((first + o_t).to(tl.int64)[:, None] * H + i_h) * D + o_v[None, :]
        tl.store(p_k, b_kv.to(k_out.dtype.element_ty), mask=(o_t < left)[:, None] & m_v[None, :])
    return b_q, b_k, b_qv, b_kv


@triton.jit
def _chunk_lam(lam, w, w_b, fixed_lam, b_q, first, left, o_t, i_h, H: tl.constexpr, BT: tl.constexpr,
               LAM: tl.constexpr):
    """lam a token of the chunk: the gate's (LAM 1), the tensor's (0), or the fixed value (2)."""
    if LAM == 1:
        return tl.sigmoid(tl.sum(b_q * w[None, :], axis=1) + w_b)
    elif LAM == 0:
        return tl.load(lam + (first + o_t).to(tl.int64) * H + i_h, mask=o_t < left, other=0).to(tl.float32)
    else:
        return tl.zeros([BT], dtype=tl.float32) + fixed_lam


@triton.jit
def _ccq_fused_chunk_kernel(q, k, lam, gate_w, gate_b, fixed_lam, cu_seqlens, count, mean, cov, q_out, k_out,
                            count_out, mean_out, cov_out, eps, norm_eps, H: tl.constexpr, D: tl.constexpr,
                            BD: tl.constexpr, BV: tl.constexpr, BT: tl.constexpr, CENTRE: tl.constexpr,
                            HAS_STATE: tl.constexpr, FINAL: tl.constexpr, TRACE: tl.constexpr, NORM: tl.constexpr,
                            LAM: tl.constexpr):
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    length = tl.load(cu_seqlens + i_n + 1).to(tl.int64) - bos
    o_t, o_d, o_v = tl.arange(0, BT), tl.arange(0, BD), i_v * BV + tl.arange(0, BV)
    m_d, m_v, m_dv = o_d < D, o_v < D, (o_d < D)[:, None] & (o_v < D)[None, :]
    dtype = q_out.dtype.element_ty
    centre, centre_v = _first_keys_mean(k, bos, length, o_t, i_h, o_d, m_d, o_v, m_v, norm_eps, H, D, BD, BV, BT,
                                        CENTRE, NORM, dtype)
    n0_int, centre, centre_v, b_P, sq_carry = _carried(count, mean, cov, i_n, i_nh, o_d, m_d, o_v, m_v, m_dv, centre,
                                                       centre_v, D, BD, BV, HAS_STATE)
    n0 = n0_int.to(tl.float32)
    key_sum, key_sum_v = tl.zeros([BD], dtype=tl.float32), tl.zeros([BV], dtype=tl.float32)
    w = tl.load(gate_w + i_h * D + o_d, mask=m_d & (LAM == 1), other=0).to(tl.float32)
    w_b = tl.load(gate_b + i_h, mask=LAM == 1, other=0).to(tl.float32)
    for start in range(0, length, BT):
        left, first = length - start, bos + start
        m_t = o_t < left
        b_q, b_k, b_qv, b_kv = _chunk_rows(q, k, k_out, first, left, o_t, i_h, o_d, m_d, o_v, m_v, norm_eps, H, D,
                                           NORM, dtype)
        b_lam = _chunk_lam(lam, w, w_b, fixed_lam, b_q, first, left, o_t, i_h, H, BT, LAM)
        kc = tl.where(m_t[:, None] & m_d[None, :], b_k - centre[None, :], 0.0)
        kc_v = tl.where(m_t[:, None] & m_v[None, :], b_kv - centre_v[None, :], 0.0)
        sums = tl.cumsum(kc, axis=0) + key_sum[None, :]  # [BT, BD]
        sums_v = tl.cumsum(kc_v, axis=0) + key_sum_v[None, :]
        sq = tl.sum(kc * kc, axis=1)
        norms = (sq_carry + tl.cumsum(sq, axis=0).to(tl.float64)).to(tl.float32)
        b_A = tl.where(o_t[:, None] >= o_t[None, :], tl.dot(b_q, tl.trans(kc), input_precision=DOT), 0.0)
        second = tl.dot(b_q, b_P, input_precision=DOT) + tl.dot(b_A, kc_v, input_precision=DOT)
        b_P += tl.dot(tl.trans(kc), kc_v, input_precision=DOT)
        key_sum, key_sum_v = key_sum + tl.sum(kc, axis=0), key_sum_v + tl.sum(kc_v, axis=0)
        sq_carry += tl.sum(sq).to(tl.float64)
        # contracted_read (ops/ccq/state.py): q - lam (second - sums (sums . q) / n) / n, over tr Sigma + eps
        n_t = n0 + (start + o_t + 1).to(tl.float32)
        raw = second - sums_v * (tl.sum(sums * b_q, axis=1) / n_t)[:, None]  # n_t Sigma_t q, this program's columns
        factor = b_lam * (n_t > 1).to(tl.float32) / n_t
        if TRACE:
            trace = norms / n_t - tl.sum(sums * sums, axis=1) / (n_t * n_t)
            factor = factor / (tl.maximum(trace, 0.0) + eps)
        p_o = q_out + ((first + o_t).to(tl.int64)[:, None] * H + i_h) * D + o_v[None, :]
        tl.store(p_o, (b_qv - raw * factor[:, None]).to(dtype), mask=m_t[:, None] & m_v[None, :])
    if FINAL:  # Sigma_T = P / n_T - m m^T about the centre, the mean moved back by it
        seen = tl.maximum(n0 + length.to(tl.float32), 1.0)
        cov_T = b_P / seen - (key_sum / seen)[:, None] * (key_sum_v / seen)[None, :]
        tl.store(cov_out + i_nh * D * D + o_d[:, None] * D + o_v[None, :], cov_T, mask=m_dv)
        if i_v == 0:
            tl.store(mean_out + i_nh * D + o_d, (key_sum / seen + centre) * (n0_int + length > 0).to(tl.float32),
                     mask=m_d)
            if i_h == 0:
                tl.store(count_out + i_n, n0_int + length)


def fused_read(q, k, lam, state, chunk_size: int, cu_seqlens: torch.Tensor, trace_scale: bool, eps: float,
               output_final_state: bool, normalize: bool = False, read_dtype: torch.dtype | None = None):
    """``(q' [1, T, H, D] in read_dtype, k as the read takes it, (count, mean, cov) or None)`` in one launch.

    ``q, k [1, T, H, D]`` as the layer made them; ``lam`` a tensor ``[1, T, H]`` or a ReadGate (evaluated in the
    kernel); ``state`` the carried CCQState (float32 statistics) or None; ``normalize``: Gated DeltaNet's L2 norms of
    q and k first, rounded to ``read_dtype``, and that k returned."""
    _, T, H, D = q.shape
    N = cu_seqlens.numel() - 1
    read_dtype = read_dtype if normalize and read_dtype is not None else q.dtype
    q_out = torch.empty(q.shape, dtype=read_dtype, device=q.device)
    k_out = torch.empty(k.shape, dtype=read_dtype, device=k.device) if normalize else k
    f = torch.float32
    count_out = torch.empty(N, dtype=torch.int64, device=q.device)
    mean_out = torch.empty(N, H, D, dtype=f, device=q.device)
    cov_out = torch.empty(N, H, D, D, dtype=f, device=q.device) if output_final_state else mean_out
    count, mean, cov = ((state.count.contiguous(), state.mean.contiguous(), state.cov.contiguous())
                        if state is not None else (count_out, mean_out, mean_out))
    mode, lam_t, weight, bias, fixed = lam_arguments(lam, q)
    BD = max(16, triton.next_power_of_2(D))  # tl.dot's least tile
    bv = min(BV, BD)
    _ccq_fused_chunk_kernel[(triton.cdiv(D, bv), N * H)](
        q.contiguous(), k.contiguous(), lam_t, weight, bias, fixed, cu_seqlens.contiguous(), count, mean, cov, q_out,
        k_out, count_out, mean_out, cov_out, eps, L2NORM_EPS, H=H, D=D, BD=BD, BV=bv, BT=BT, CENTRE=chunk_size,
        HAS_STATE=state is not None, FINAL=output_final_state, TRACE=trace_scale, NORM=normalize, LAM=mode,
        num_warps=NUM_WARPS)
    final = (count_out, mean_out, cov_out) if output_final_state else None
    return q_out, k_out, final


def fused_read_flops(tokens: int, heads: int, head_dim: int) -> float:
    """Multiply-adds x 2 the pass does: per chunk and program, ``q kc^T`` over the whole key, ``q P``, ``A kc_v``
    and ``kc^T kc_v``; D / BV programs a head."""
    programs = -(-head_dim // BV)
    chunks = -(-tokens // BT)
    per_chunk = 2 * (BT * BT * head_dim + BT * head_dim * BV + BT * BT * BV + head_dim * BT * BV)
    return float(heads * programs * chunks * per_chunk)


def takes_fused_read(q: torch.Tensor, state: CCQState | None) -> bool:
    """What the pass computes: no gradients (training takes the torch forms, whose gradients are checked), float32
    statistics or none to carry, inputs of at most float32."""
    return (not torch.is_grad_enabled() and q.dtype != torch.float64
            and (state is None or (state.cov.dtype == torch.float32 and state.mean.dtype == torch.float32)))
