"""CCQ's read over packed sequences as one Triton pass (fla's ``fused_chunk`` shape): a program per sequence, head
and block of BV output columns walks its sequence chunk by chunk, the chunk state ``P[:, block] = sum kc kc^T`` on
chip, and writes the contracted queries, Gated DeltaNet's normalised keys and the final statistics. Gated DeltaNet's
L2 norms of q and k, the gate ``lam = sigmoid(q . w_h + b_h)``, the centre (the carried mean, or the mean of the
sequence's first ``chunk_size`` keys) and the carried statistics are all read inside it: one launch a layer.

What each program computes, per chunk of BT tokens (``kc`` the keys shifted by the centre, zero where no token sits):
``A = tril(q kc^T)``, ``second_q = q P + A kc[:, block]`` (P symmetric, so ``q P`` is ``P q``), the key sums and
squared norms by prefix sums, then ``P += kc^T kc[:, block]``: the read ``contracted_read`` computes from them
(ops/ccq/state.py), with every dot in IEEE float32, never TF32. The sums over the whole key (``A``, ``q . key_sum``,
``|key_sum|^2``) every program of a head computes for itself: BV columns share them at the price of a few dots.
Chunks start at each sequence's first token, so none crosses a boundary; empty sequences write their carried state.

packed.py's composition (torch ops over chunk slots) is this pass's reference; a process takes this pass only once it
has agreed with that reference in float64 on a few of the call's own sequences on its device (ops/trust.py)."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ccq_eval.ops import trust
from ccq_eval.ops.ccq.state import TRACE_EPS, CCQState, ReadGate, check_sigma_scale
from ccq_eval.ops.ccq.step import L2NORM_EPS, lam_arguments, normalized
from ccq_eval.ops.in_place import runs_triton

# tokens a chunk, output columns a program (D / BV programs a head: 8 at GLA-1.3B's d_k 256, 4 at Gated DeltaNet's
# 128) and warps: the [BT, D] tiles of q and k and the [D, BV] state fit a program's registers best of the shapes
# compiled for sm_90 (ptxas: 128 registers and 3.2 KB of spills a thread at D = 256; 4 warps spill 18 KB)
BT, BV, NUM_WARPS = 16, 32, 8


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
def _ccq_fused_chunk_kernel(q, k, lam, gate_w, gate_b, fixed_lam, cu_seqlens, count, mean, cov, q_out, k_out,
                            count_out, mean_out, cov_out, eps, norm_eps, H: tl.constexpr, D: tl.constexpr,
                            BD: tl.constexpr, BV: tl.constexpr, BT: tl.constexpr, CENTRE: tl.constexpr,
                            HAS_STATE: tl.constexpr, FINAL: tl.constexpr, TRACE: tl.constexpr, NORM: tl.constexpr,
                            LAM: tl.constexpr):
    i_v, i_nh = tl.program_id(0), tl.program_id(1)
    i_n, i_h = i_nh // H, i_nh % H
    bos = tl.load(cu_seqlens + i_n).to(tl.int64)
    length = tl.load(cu_seqlens + i_n + 1).to(tl.int64) - bos
    o_t, o_d = tl.arange(0, BT), tl.arange(0, BD)
    o_v = i_v * BV + tl.arange(0, BV)
    m_d, m_v = o_d < D, o_v < D
    dtype = q_out.dtype.element_ty
    # the centre: the carried mean where keys were seen, else the mean of the first CENTRE keys (normalised first),
    # the whole row's and this program's columns'
    first_sum = tl.zeros([BD], dtype=tl.float32)
    first_sum_v = tl.zeros([BV], dtype=tl.float32)
    for start in range(0, CENTRE, BT):
        left = tl.minimum(length, CENTRE) - start
        b_k = _rows(k, bos + start, o_t, left, i_h, H, D, o_d, m_d)
        k_scale = _row_scale(b_k, norm_eps)
        first_sum += tl.sum(_scaled(b_k, k_scale, NORM, dtype), axis=0)
        first_sum_v += tl.sum(_scaled(_rows(k, bos + start, o_t, left, i_h, H, D, o_v, m_v), k_scale, NORM, dtype),
                              axis=0)
    first_count = tl.maximum(tl.minimum(length, CENTRE), 1).to(tl.float32)
    centre, centre_v = first_sum / first_count, first_sum_v / first_count
    b_P = tl.zeros([BD, BV], dtype=tl.float32)  # n0 (Sigma + 0): the carried moment about the carried mean
    sq_carry = tl.zeros([1], dtype=tl.float64)
    n0_int = tl.zeros([1], dtype=tl.int64).sum()
    if HAS_STATE:
        n0_int = tl.load(count + i_n)
        carried = tl.load(mean + i_nh * D + o_d, mask=m_d, other=0)
        centre = tl.where(n0_int > 0, carried, centre)
        centre_v = tl.where(n0_int > 0, tl.load(mean + i_nh * D + o_v, mask=m_v, other=0), centre_v)
        p_cov = cov + i_nh * D * D + o_d[:, None] * D + o_v[None, :]
        b_P = n0_int.to(tl.float32) * tl.load(p_cov, mask=m_d[:, None] & m_v[None, :], other=0)
        diagonal = n0_int.to(tl.float32) * tl.load(cov + i_nh * D * D + o_d * (D + 1), mask=m_d, other=0)
        sq_carry += tl.sum(diagonal).to(tl.float64)
    n0 = n0_int.to(tl.float32)
    key_sum = tl.zeros([BD], dtype=tl.float32)
    key_sum_v = tl.zeros([BV], dtype=tl.float32)
    if LAM == 1:
        w = tl.load(gate_w + i_h * D + o_d, mask=m_d, other=0).to(tl.float32)
        w_b = tl.load(gate_b + i_h).to(tl.float32)

    for start in range(0, length, BT):
        left = length - start
        m_t = o_t < left
        first = bos + start
        b_q = _rows(q, first, o_t, left, i_h, H, D, o_d, m_d)
        b_k = _rows(k, first, o_t, left, i_h, H, D, o_d, m_d)
        b_qv = _rows(q, first, o_t, left, i_h, H, D, o_v, m_v)
        b_kv = _rows(k, first, o_t, left, i_h, H, D, o_v, m_v)
        if NORM:  # the same scale a row, so the columns round exactly as the whole rows do
            q_scale, k_scale = _row_scale(b_q, norm_eps), _row_scale(b_k, norm_eps)
            b_q, b_qv = _scaled(b_q, q_scale, NORM, dtype), _scaled(b_qv, q_scale, NORM, dtype)
            b_k, b_kv = _scaled(b_k, k_scale, NORM, dtype), _scaled(b_kv, k_scale, NORM, dtype)
            p_k = k_out + ((first + o_t).to(tl.int64)[:, None] * H + i_h) * D + o_v[None, :]
            tl.store(p_k, b_kv.to(k_out.dtype.element_ty), mask=m_t[:, None] & m_v[None, :])
        if LAM == 1:
            b_lam = tl.sigmoid(tl.sum(b_q * w[None, :], axis=1) + w_b)
        elif LAM == 0:
            b_lam = tl.load(lam + (first + o_t).to(tl.int64) * H + i_h, mask=m_t, other=0).to(tl.float32)
        else:
            b_lam = tl.zeros([BT], dtype=tl.float32) + fixed_lam
        kc = tl.where(m_t[:, None] & m_d[None, :], b_k - centre[None, :], 0.0)
        kc_v = tl.where(m_t[:, None] & m_v[None, :], b_kv - centre_v[None, :], 0.0)
        sums = tl.cumsum(kc, axis=0) + key_sum[None, :]  # [BT, BD]
        sums_v = tl.cumsum(kc_v, axis=0) + key_sum_v[None, :]
        sq = tl.sum(kc * kc, axis=1)
        norms = (sq_carry + tl.cumsum(sq, axis=0).to(tl.float64)).to(tl.float32)
        causal = o_t[:, None] >= o_t[None, :]
        b_A = tl.where(causal, tl.dot(b_q, tl.trans(kc), input_precision="ieee"), 0.0)
        second = tl.dot(b_q, b_P, input_precision="ieee") + tl.dot(b_A, kc_v, input_precision="ieee")
        b_P += tl.dot(tl.trans(kc), kc_v, input_precision="ieee")
        key_sum += tl.sum(kc, axis=0)
        key_sum_v += tl.sum(kc_v, axis=0)
        sq_carry += tl.sum(sq).to(tl.float64)

        n_t = n0 + (start + o_t + 1).to(tl.float32)
        dot = tl.sum(sums * b_q, axis=1)
        raw = second - sums_v * (dot / n_t)[:, None]  # n_t Sigma_t q, this program's columns
        factor = b_lam * (n_t > 1).to(tl.float32) / n_t
        if TRACE:
            trace = norms / n_t - tl.sum(sums * sums, axis=1) / (n_t * n_t)
            factor = factor / (tl.maximum(trace, 0.0) + eps)
        p_o = q_out + ((first + o_t).to(tl.int64)[:, None] * H + i_h) * D + o_v[None, :]
        tl.store(p_o, (b_qv - raw * factor[:, None]).to(dtype), mask=m_t[:, None] & m_v[None, :])

    if FINAL:  # Sigma_T = P / n_T - m m^T about the centre, the mean moved back by it
        n_T = n0 + length.to(tl.float32)
        seen = tl.maximum(n_T, 1.0)
        mean_T, mean_T_v = key_sum / seen, key_sum_v / seen
        p_cov = cov_out + i_nh * D * D + o_d[:, None] * D + o_v[None, :]
        tl.store(p_cov, b_P / seen - mean_T[:, None] * mean_T_v[None, :], mask=m_d[:, None] & m_v[None, :])
        if i_v == 0:
            tl.store(mean_out + i_nh * D + o_d, (mean_T + centre) * (n_T > 0).to(tl.float32), mask=m_d)
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
    count, mean, cov = (state.count, state.mean, state.cov) if state is not None else (count_out, mean_out, mean_out)
    mode, lam_t, weight, bias, fixed = lam_arguments(lam, q)
    BD = max(16, triton.next_power_of_2(D))  # tl.dot's least tile
    bv = min(BV, BD)
    _ccq_fused_chunk_kernel[(triton.cdiv(D, bv), N * H)](
        q.contiguous(), k.contiguous(), lam_t, weight, bias, fixed, cu_seqlens, count, mean, cov, q_out, k_out,
        count_out, mean_out, cov_out, eps, L2NORM_EPS, H=H, D=D, BD=BD, BV=bv, BT=BT, CENTRE=chunk_size,
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


TRIAL_SEQUENCES = 4  # a trial's sequences: the call's first few, each cut to its first TRIAL_TOKENS tokens in all
TRIAL_TOKENS = 1024


def takes_fused_read(q: torch.Tensor, state: CCQState | None) -> bool:
    """What the pass computes: no gradients (training takes the torch forms, whose gradients are checked), float32
    statistics or none to carry, inputs of at most float32."""
    return (not torch.is_grad_enabled() and q.dtype != torch.float64
            and (state is None or (state.cov.dtype == torch.float32 and state.mean.dtype == torch.float32)))


def _packed_layout(q: torch.Tensor, cu_seqlens: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
    """(``q`` as one packed row ``[1, B T, H, D]``, its cu_seqlens): B whole sequences are B packed ones."""
    if cu_seqlens is not None:
        return q, cu_seqlens
    B, T = q.shape[:2]
    return q.reshape(1, B * T, *q.shape[2:]), torch.arange(0, (B + 1) * T, T, dtype=torch.int32, device=q.device)


def contract_read(q: torch.Tensor, k: torch.Tensor, lam: torch.Tensor | ReadGate, state: CCQState | None,
                  output_final_state: bool, chunk_size: int = 64, cu_seqlens: torch.Tensor | None = None,
                  sigma_scale: str = "none", normalize: bool = False,
                  read_dtype: torch.dtype | None = None) -> tuple[torch.Tensor, torch.Tensor, CCQState | None]:
    """A layer's read of whole or packed sequences from its raw ``q, k [B, T, H, D]``: ``(q', k as the read takes
    it, statistics or None)``. ``lam`` a tensor ``[B, T, H]`` or the gate; ``normalize`` (Gated DeltaNet's)
    L2-normalises q and k first and rounds them to ``read_dtype``. One launch where Triton runs and the pass has
    agreed with its reference on this device; ``reference_read`` (torch ops) otherwise."""
    check_sigma_scale(sigma_scale)
    read_dtype = read_dtype or q.dtype
    if _fused(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize, read_dtype):
        (q1, cu), (k1, _) = _packed_layout(q, cu_seqlens), _packed_layout(k, cu_seqlens)
        lam1 = _packed_layout(lam, cu_seqlens)[0] if isinstance(lam, torch.Tensor) else lam
        q_clean, k_read, final = fused_read(q1, k1, lam1, state, chunk_size, cu, sigma_scale == "trace", TRACE_EPS,
                                            output_final_state, normalize, read_dtype)
        new = CCQState(*final) if final is not None else None
        return q_clean.view(q.shape), (k_read.view(k.shape) if normalize else k), new
    return reference_read(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize,
                          read_dtype)


def reference_read(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize,
                   read_dtype) -> tuple[torch.Tensor, torch.Tensor, CCQState | None]:
    """contract_read in torch ops: the norms, the gate, then the chunked or packed composition."""
    from ccq_eval.ops.ccq.chunk import torch_contract_query

    if normalize:
        q, k = normalized(q, k, read_dtype)
    lam = lam if isinstance(lam, torch.Tensor) else lam.lam(q)
    q_clean, new = torch_contract_query(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale)
    return q_clean, k, new


def _fused(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize, read_dtype) -> bool:
    """The one-launch pass where Triton runs (a GPU; the CPU under Triton's interpreter when fla's kernels are asked
    for), once it has agreed with its reference in float64 on this device (ops/trust.py)."""
    if not (runs_triton(q) and takes_fused_read(q, state)):
        return False
    options = {"sigma_scale": sigma_scale, "lam": ("given", "gate", "fixed")[lam_arguments(lam, q)[0]],
               "normalize": normalize, "read_dtype": str(read_dtype).removeprefix("torch."),
               "carried": state is not None, "final": output_final_state, "chunk_size": chunk_size}
    return trust.trusted("CCQ packed read", q, True, {"H": q.shape[2], "D": q.shape[3]}, options,
                         lambda: _fused_trial(q, k, lam, state, output_final_state, chunk_size, cu_seqlens,
                                              sigma_scale, normalize, read_dtype))


def _fused_trial(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize,
                 read_dtype) -> float:
    """The pass on the call's first few sequences (their first TRIAL_TOKENS tokens) beside the packed composition in
    float64, from the inputs the kernel reads (normalised q and k rounded to the read's dtype as it rounds them): the
    largest relative difference of the contracted query, the k it hands the backbone and the final statistics; the
    count must be exact."""
    from ccq_eval.ops.ccq.chunk import torch_contract_query

    (q1, cu), (k1, _) = _packed_layout(q, cu_seqlens), _packed_layout(k, cu_seqlens)
    cuts = [min(int(c), TRIAL_TOKENS) for c in cu[:TRIAL_SEQUENCES + 1].tolist()]  # read back: first use only
    T, n = cuts[-1], len(cuts) - 1
    small_cu = torch.tensor(cuts, dtype=cu.dtype, device=q.device)
    small_q, small_k = q1[:, :T].clone(), k1[:, :T].clone()
    small_lam = _packed_layout(lam, cu_seqlens)[0][:, :T].clone() if isinstance(lam, torch.Tensor) else lam
    small_state = (CCQState(*(x[:n].clone() for x in (state.count, state.mean, state.cov)))
                   if state is not None else None)
    got_q, got_k, final = fused_read(small_q, small_k, small_lam, small_state, chunk_size, small_cu,
                                     sigma_scale == "trace", TRACE_EPS, output_final_state, normalize, read_dtype)
    q_in, k_in = normalized(small_q, small_k, read_dtype) if normalize else (small_q, small_k)
    lam64 = small_lam.double() if isinstance(small_lam, torch.Tensor) else small_lam.lam(q_in).double()
    state64 = (CCQState(small_state.count, small_state.mean.double(), small_state.cov.double())
               if small_state is not None else None)
    expected_q, expected = torch_contract_query(q_in.double(), k_in.double(), lam64, state64, True, chunk_size,
                                                small_cu, sigma_scale)
    differences = [trust.relative_difference(got_q, expected_q), trust.relative_difference(got_k, k_in.double())]
    if final is not None:
        if not torch.equal(final[0], expected.count):
            return float("inf")
        differences += [trust.relative_difference(final[1], expected.mean),
                        trust.relative_difference(final[2], expected.cov)]
    return max(differences)
