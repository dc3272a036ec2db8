"""The CCQ operator: q'_t = (I - lam_t * Sigma_t) q_t, Sigma_t the running covariance of the keys.

Three implementations of one definition, as fla keeps its operators:

- ``contract_query``: the parallel form for a whole sequence. The only non-elementwise term,
  ``sum_{j<=t} k_j (k_j^T q_t)``, is causal linear attention with values = keys and no decay: a
  chunked torch computation on CPU (``running_key_sums``), fla's ``chunk_simple_gla`` kernel on CUDA.
- ``contract_query_step``: one decoding token, a Welford update of the constant-size state.
- ``naive_contract_query``: per position, straight from the definition, in float64. Slow; for tests.

Numerics: the raw-moment form ``Cbar_t - mu_t mu_t^T`` cancels catastrophically when keys share a
large mean. Sigma is shift-invariant, so the fast path works on keys shifted by a fixed centre
(the carried mean, or the mean of the first chunk), which keeps every accumulated term O(spread).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ccq_eval.models import fp32_matmul, kernel_trust
from ccq_eval.models.fp32_matmul import ieee_fp32
from ccq_eval.models.ccq_step_kernel import contract_query_step_fused, takes as takes_fused_step
from ccq_eval.models.in_place_steps import runs_triton
from ccq_eval.models.packed_chunks import chunk_slots

SIGMA_SCALES = ("none", "trace")
TRACE_EPS = 1e-6
BLOCK_TOKENS = 2048  # a multiple of every chunk size used; bounds the operator's working memory
# packed sequences on a GPU go through in blocks of this many tokens' chunk slots: fewer blocks are fewer launches;
# a block holds three [slots, H, D, D] float32 tensors (768 MB at the 1.3B GLA shape) and its "same sequence,
# earlier slot" matmul costs slots^2 H D^2 multiply-adds (17 GFLOP), a few hundredths of a millisecond on tensor cores
PACKED_BLOCK_TOKENS = 16384


@dataclass
class CCQState:
    """Running key statistics of one layer, per sequence and head; constant size in T.

    count: ``[N]`` int64, keys seen so far per sequence.
    mean:  ``[N, H, D]``, running key mean mu_t.
    cov:   ``[N, H, D, D]``, running key covariance Sigma_t (centred second moment / count).
    mean/cov are float32, or float64 when the inputs are float64.
    """

    count: torch.Tensor
    mean: torch.Tensor
    cov: torch.Tensor

    def select(self, index: int | slice) -> "CCQState":
        if isinstance(index, int):
            index = slice(index, index + 1)
        return CCQState(self.count[index], self.mean[index], self.cov[index])

    @staticmethod
    def cat(states: list["CCQState"]) -> "CCQState":
        return CCQState(
            torch.cat([s.count for s in states]),
            torch.cat([s.mean for s in states]),
            torch.cat([s.cov for s in states]),
        )


def _stat_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _statistics(state: CCQState | None, n: int, H: int, D: int, f: torch.dtype, device) -> tuple:
    """(count, mean, cov) of ``state`` in ``f``: the very tensors where they already are in it (a decoding step
    updates Sigma in place), zeros for ``n`` sequences that have seen no key where there is no state."""
    if state is None:
        return (torch.zeros(n, dtype=f, device=device), torch.zeros(n, H, D, dtype=f, device=device),
                torch.zeros(n, H, D, D, dtype=f, device=device))
    return state.count.to(f), state.mean.to(f), state.cov.to(f)


def _check_sigma_scale(sigma_scale: str) -> None:
    if sigma_scale not in SIGMA_SCALES:
        raise ValueError(f"sigma_scale must be one of {SIGMA_SCALES}, got {sigma_scale!r}")


def _apply_trace_scale(sigma_q: torch.Tensor, trace: torch.Tensor) -> torch.Tensor:
    # 'trace': Sigma / (tr Sigma + eps) keeps |Sigma q| <= |q|, whatever the scale of the keys.
    return sigma_q / (trace.clamp_min(0) + TRACE_EPS).unsqueeze(-1)


FP32_BOUND = 1e-4  # relative error against the float64 definition that fp32 inputs must meet
BF16_BOUND = 2.0 ** -7  # bfloat16 inputs: the contracted query's own rounding (2^-8) and as much again for its sums

# How the second moment is computed: "torch" (chunked matmuls at fp32 precision on every device: IEEE on a
# CPU, 3xTF32 on a GPU's tensor cores; fp32_matmul.py), or "fla" (fla's chunk_simple_gla kernel). On Ampere and
# newer GPUs the kernel's fp32 tl.dot runs in one TF32 pass (10 mantissa bits): 1e-3 to 1e-2 relative error,
# measured under Triton's interpreter with TF32-rounded dots (tests/interpreter), above FP32_BOUND. So the
# default is "torch"; "fla" stays for measuring it.
SECOND_MOMENT = "torch"


def running_key_sums(q, kc, s0, p0, chunk_size=64, kernel: str | None = None):
    """Causal sums over shifted keys kc, for ``q, kc: [B, T, H, D]``, ``s0: [B, H, D]``, ``p0: [B, H, D, D]``:

    ``key_sum_t = s0 + sum_{j<=t} kc_j``, ``second_q_t = p0 q_t + sum_{j<=t} kc_j (kc_j^T q_t)``,
    ``sq_norm_t = tr(p0) + sum_{j<=t} |kc_j|^2``, and ``p_T = p0 + sum_j kc_j kc_j^T``.

    second_q is causal linear attention with v = k, no decay and scale 1. The "torch" form (default,
    SECOND_MOMENT): prefix sums inside a chunk are a triangular matmul, and the D x D states entering the
    chunks are a loop over chunks on CPU (torch's cumsum is slow there) or one cumsum elsewhere.
    ``kernel="fla"``: fla's chunked kernel (float32 only; TF32 on recent GPUs, see SECOND_MOMENT).
    """
    B, T, H, D = q.shape
    kernel = kernel or SECOND_MOMENT
    if kernel == "fla":
        from fla.ops.simple_gla import chunk_simple_gla

        if q.dtype == torch.float64:
            raise ValueError("running_key_sums: float64 statistics cannot go through fla's fp32-accumulating "
                             "kernel; use the torch form")
        second_q, _ = chunk_simple_gla(q, kc, kc, scale=1.0, initial_state=p0.contiguous())
        key_sum = s0.unsqueeze(1) + kc.cumsum(dim=1)
        sq_norm = torch.diagonal(p0, dim1=-2, dim2=-1).sum(-1).unsqueeze(1) + (kc * kc).sum(-1).cumsum(dim=1)
        return key_sum, second_q, sq_norm, p0 + torch.einsum("bthi,bthj->bhij", kc, kc)
    return _torch_key_sums(q, kc, s0, p0, chunk_size, loop=q.device.type == "cpu")


def entering_states(p0: torch.Tensor, outer: torch.Tensor, loop: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """(the state entering each chunk [B, H, NC, D, D], the final state): p0 plus the outer products of the
    chunks before; a Python loop (the reference, and faster on CPU) or one exclusive cumsum in place (a GPU: two
    passes over these, the read's largest tensors, where inclusive-minus-own took five)."""
    if not loop:
        entering = torch.cat([p0.unsqueeze(2), outer[:, :, :-1]], dim=2).cumsum_(dim=2)
        return entering, entering[:, :, -1] + outer[:, :, -1]
    entering = []  # a list: slice assignment costs autograd dearly
    state = p0
    for n in range(outer.shape[2]):
        entering.append(state)
        state = state + outer[:, :, n]
    return torch.stack(entering, dim=2), state


def _chunked(x: torch.Tensor, C: int) -> torch.Tensor:
    """``[B, T, H, D]`` -> ``[B, H, NC, C, D]``, contiguous (what the batched matmuls read without copying again),
    the last chunk zero-padded: zeros add nothing to any sum, and their rows are dropped at the end."""
    B, T, H, D = x.shape
    pad = (-T) % C
    out = x.new_empty(B, H, T + pad, D)
    out[:, :, :T].copy_(x.transpose(1, 2))
    out[:, :, T:].zero_()
    return out.view(B, H, (T + pad) // C, C, D)


def _torch_key_sums(q, kc, s0, p0, chunk_size, loop):
    B, T, H, D = q.shape
    C = chunk_size
    qc, kcc = _chunked(q, C), _chunked(kc, C)
    NC = qc.shape[2]
    tri = torch.ones(C, C, dtype=q.dtype, device=q.device).tril()
    # |kc_j|^2 summed over time: [B, T, H], 1/D the keys' size, summed in float64
    sq_norm = torch.diagonal(p0, dim1=-2, dim2=-1).sum(-1).unsqueeze(1) + torch.linalg.vector_norm(
        kc, dim=-1).double().square().cumsum(dim=1).to(q.dtype)
    totals = kcc.sum(dim=3)  # [B, H, NC, D]
    before = s0.unsqueeze(2) + totals.cumsum(dim=2) - totals
    mm = fp32_matmul.matmul
    sums = mm(tri, kcc, exact_left=True) + before.unsqueeze(3)
    outer = mm(kcc.transpose(-1, -2), kcc)  # [B, H, NC, D, D]
    entering, state = entering_states(p0, outer, loop)
    # every prefix state is symmetric, so q @ P == (P q)^T
    second = mm(mm(qc, kcc.transpose(-1, -2)) * tri, kcc)
    fp32_matmul.matmul_add_(second.view(-1, C, D), qc.view(-1, C, D), entering.view(-1, D, D))

    def unchunk(x):
        return x.view(B, H, NC * C, D)[:, :, :T].transpose(1, 2)

    return unchunk(sums), unchunk(second), sq_norm, state


def _contract_blocks(q, k, lam, state, chunk_size, sigma_scale, output_final_state):
    """Long sequences go through in blocks of BLOCK_TOKENS, carrying the statistics between them:
    the same numbers, with working memory bounded by a block rather than by T."""
    T = q.shape[1]
    if T <= BLOCK_TOKENS:
        return _contract_dense(q, k, lam, state, chunk_size, sigma_scale, output_final_state)
    outs = []
    for start in range(0, T, BLOCK_TOKENS):
        end = min(start + BLOCK_TOKENS, T)
        out, state = _contract_dense(q[:, start:end], k[:, start:end], lam[:, start:end], state, chunk_size,
                                     sigma_scale, output_final_state=True)
        outs.append(out)
    return torch.cat(outs, dim=1), (state if output_final_state else None)


def _read(qf, lam, key_sum, second_q, sq_norm, n_t, sigma_scale, out=None) -> torch.Tensor:
    """q - lam Sigma_t q from the running sums, in two passes over [B, T, H, D] (the per-token scalars are folded
    into one small factor): Sigma_t q = (second_q - key_sum (key_sum . q) / n) / n; into ``out`` where given."""
    dot = (key_sum * qf).sum(-1, keepdim=True)
    raw = torch.addcmul(second_q, key_sum, dot / n_t, value=-1)  # n Sigma_t q
    # one key has zero covariance exactly; keep rounding noise from being divided by a zero trace
    factor = lam.to(qf.dtype).unsqueeze(-1) * (n_t > 1) / n_t
    if sigma_scale == "trace":
        trace = sq_norm / n_t[..., 0] - (key_sum * key_sum).sum(-1) / n_t[..., 0] ** 2
        factor = factor / (trace.clamp_min(0) + TRACE_EPS).unsqueeze(-1)
    return torch.addcmul(qf, raw, factor, value=-1, out=out)


def _contract_dense(q, k, lam, state, chunk_size, sigma_scale, output_final_state):
    """contract_query for B independent, unpadded sequences."""
    B, T, H, D = q.shape
    f = _stat_dtype(q)
    qf = q.to(f)
    n0, carried_mean, carried_cov = _statistics(state, B, H, D, f, q.device)

    # The centre: the carried mean when there is one, else the mean of the first chunk of keys.
    # Sigma does not depend on it, so it carries no gradient.
    first_chunk_mean = k[:, :chunk_size].to(f).mean(dim=1)
    has_state = (n0 > 0).view(B, 1, 1)
    centre = torch.where(has_state, carried_mean, first_chunk_mean).detach()

    kc = k - centre.unsqueeze(1)  # float32 (centre's) in the same pass as the cast
    d0 = (carried_mean - centre) * has_state
    s0 = n0.view(B, 1, 1) * d0  # carried sum of shifted keys
    p0 = n0.view(B, 1, 1, 1) * (carried_cov + d0.unsqueeze(-1) * d0.unsqueeze(-2))  # carried raw moment

    n_t = (n0.view(B, 1) + torch.arange(1, T + 1, dtype=f, device=q.device)).view(B, T, 1, 1)
    key_sum, second_q, sq_norm, p_T = running_key_sums(qf, kc, s0, p0, chunk_size)
    q_clean = _read(qf, lam, key_sum, second_q, sq_norm, n_t, sigma_scale).to(q.dtype)

    final = None
    if output_final_state:
        n_T = n0 + T
        mean_T = key_sum[:, -1] / n_T.view(B, 1, 1)
        cov_T = p_T / n_T.view(B, 1, 1, 1) - mean_T.unsqueeze(-1) * mean_T.unsqueeze(-2)
        final = CCQState(count=n_T.round().to(torch.int64), mean=mean_T + centre, cov=cov_T)
    return q_clean, final


def contract_query(
    q: torch.Tensor,
    k: torch.Tensor,
    lam: torch.Tensor,
    initial_state: CCQState | None = None,
    output_final_state: bool = False,
    chunk_size: int = 64,
    cu_seqlens: torch.LongTensor | None = None,
    sigma_scale: str = "none",
) -> tuple[torch.Tensor, CCQState | None]:
    """Curvature-conditioned queries for whole sequences.

    Args:
        q, k: ``[B, T, H, D]``, the query and key the backbone reads and writes with.
        lam: ``[B, T, H]``, the gate lam_t per token and head.
        initial_state: statistics of the keys before this call (they count as earlier keys).
        output_final_state: also return the statistics after the last key.
        chunk_size: chunk length of the parallel form.
        cu_seqlens: ``[N + 1]`` boundaries of packed sequences (B must be 1); each is independent.
        sigma_scale: ``'none'`` (paper-literal) or ``'trace'`` (Sigma / (tr Sigma + 1e-6)).

    Returns:
        ``(q_clean [B, T, H, D] in q.dtype, CCQState with N = B or len(cu_seqlens) - 1, or None)``.
        Sigma_t includes key t itself (uniform 1/t weighting).
    """
    _check_sigma_scale(sigma_scale)
    if q.shape != k.shape or lam.shape != q.shape[:3]:
        raise ValueError(f"contract_query: q {tuple(q.shape)}, k {tuple(k.shape)} and lam {tuple(lam.shape)} do not fit [B, T, H, D] / [B, T, H]")
    if cu_seqlens is not None and q.shape[0] != 1:
        raise ValueError(f"contract_query: with cu_seqlens the batch size must be 1, got {q.shape[0]}")
    with fp32_matmul.precision_for(q.dtype):  # statistics in float32; its matmuls as precise as the model needs
        if cu_seqlens is None:
            return _contract_blocks(q, k, lam, initial_state, chunk_size, sigma_scale, output_final_state)
        return _contract_packed(q, k, lam, initial_state, chunk_size, cu_seqlens, sigma_scale, output_final_state)


def _first_chunk_mean(k: torch.Tensor, cu: torch.Tensor, chunk_size: int, f: torch.dtype) -> torch.Tensor:
    """Each packed sequence's mean of its first ``chunk_size`` keys (``k [T, H, D]``; 0 for an empty sequence)."""
    lengths = cu[1:] - cu[:-1]
    within = torch.arange(chunk_size, device=k.device)
    place = (cu[:-1, None] + within).clamp_(max=max(k.shape[0] - 1, 0))
    taken = (within < lengths[:, None]).to(f)  # [N, C]
    keys = k.to(f)[place] if k.shape[0] else k.new_zeros(*place.shape, *k.shape[1:], dtype=f)
    return torch.einsum("nc,nchd->nhd", taken, keys) / taken.sum(1).clamp_min(1)[:, None, None]


def packed_block_tokens(device: torch.device) -> int:
    """PACKED_BLOCK_TOKENS on a GPU; on a CPU, whose matmuls are slow and launches cheap, BLOCK_TOKENS."""
    return BLOCK_TOKENS if device.type == "cpu" else PACKED_BLOCK_TOKENS


def _contiguous(x: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """``x`` in ``dtype``, contiguous: one pass (cast and layout together)."""
    return torch.empty(x.shape, dtype=dtype, device=x.device).copy_(x)


@dataclass
class _Carried:
    """Per packed sequence, what the blocks carry: the count before this call, the centre the keys are shifted by,
    and the sums of the shifted keys, of their outer products and of their squared norms (float64), so far."""

    n0: torch.Tensor  # [N]
    centre: torch.Tensor  # [N, H, D]
    key_sum: torch.Tensor  # [N, H, D]
    moment: torch.Tensor  # [N, H, D, D]
    sq_norm: torch.Tensor  # [N, H]


def _carried(state: CCQState | None, k: torch.Tensor, cu: torch.Tensor, C: int, f: torch.dtype) -> _Carried:
    """The carried statistics, about a centre: the carried mean where there is one, else the first chunk's mean."""
    N, (H, D) = cu.numel() - 1, k.shape[-2:]
    n0, carried_mean, carried_cov = _statistics(state, N, H, D, f, k.device)
    has_state = (n0 > 0).view(N, 1, 1)
    centre = torch.where(has_state, carried_mean, _first_chunk_mean(k[0], cu, C, f)).detach()
    d0 = (carried_mean - centre) * has_state
    moment = n0.view(N, 1, 1, 1) * (carried_cov + d0.unsqueeze(-1) * d0.unsqueeze(-2))
    return _Carried(n0, centre, n0.view(N, 1, 1) * d0, moment,
                    torch.diagonal(moment, dim1=-2, dim2=-1).sum(-1).double())


def _packed_block(carried: _Carried, seq, first_token, qc, kc, lam, sigma_scale, out) -> torch.Tensor:
    """One block of chunk slots (``qc, kc [nb, H, C, D]`` contiguous, float32, keys shifted; ``seq`` each slot's
    sequence; ``first_token`` the index in its sequence of each slot's first token): the block's contracted queries
    ``[nb, C, H, D]`` (written into ``out`` where given), and the carried sums moved past it (in place)."""
    nb, _, C, D = qc.shape
    f, N = qc.dtype, carried.n0.shape[0]
    mm, mm_add_ = fp32_matmul.matmul, fp32_matmul.matmul_add_
    tri = torch.ones(C, C, dtype=f, device=qc.device).tril()
    earlier = (torch.ones(nb, nb, dtype=torch.bool, device=qc.device).tril(-1)
               & (seq[:, None] == seq[None, :])).to(f)  # [nb, nb]: the same sequence's earlier slots
    owns = (seq[None, :] == torch.arange(N, device=qc.device)[:, None]).to(f)  # [N, nb] (empty slots' keys are 0)
    totals = kc.sum(2)  # [nb, H, D]
    outer = mm(kc.transpose(-1, -2), kc)  # [nb, H, D, D]
    sq = torch.linalg.vector_norm(kc, dim=-1).double().square()  # [nb, H, C]
    entering = mm_add_(carried.moment[seq].view(1, nb, -1), earlier[None], outer.view(1, nb, -1),
                       exact_left=True).view_as(outer)
    before = mm_add_(carried.key_sum[seq].view(1, nb, -1), earlier[None], totals.view(1, nb, -1),
                     exact_left=True).view_as(totals)
    sums = mm(tri, kc, exact_left=True) + before.unsqueeze(2)  # [nb, H, C, D]
    second = mm(mm(qc, kc.transpose(-1, -2)) * tri, kc)
    mm_add_(second.view(-1, C, D), qc.view(-1, C, D), entering.view(-1, D, D))
    norms = (carried.sq_norm[seq] + (earlier.double() @ sq.sum(-1))).unsqueeze(-1) + sq.cumsum(-1)  # [nb, H, C]
    n_t = (carried.n0[seq, None] + first_token[:, None].to(f) + torch.arange(1, C + 1, dtype=f, device=qc.device))
    read = _read(qc.transpose(1, 2), lam, sums.transpose(1, 2), second.transpose(1, 2), norms.transpose(1, 2).to(f),
                 n_t.view(nb, C, 1, 1), sigma_scale, out=out)
    mm_add_(carried.key_sum.view(1, N, -1), owns[None], totals.view(1, nb, -1), exact_left=True)
    mm_add_(carried.moment.view(1, N, -1), owns[None], outer.view(1, nb, -1), exact_left=True)
    carried.sq_norm = carried.sq_norm + owns.double() @ sq.sum(-1)
    return read


def _contract_packed(q, k, lam, state, chunk_size, cu_seqlens, sigma_scale, output_final_state):
    """contract_query for N sequences packed along time, as one computation: every sequence's chunks side by side
    in chunk slots that never cross a boundary (packed_chunks.py), no Python loop over sequences and no value read
    back to the host, so the ops dispatched depend on T and N only through the number of blocks of slots.

    The statistics entering a chunk are its sequence's carried ones plus the outer products of its sequence's
    earlier chunks: inside a block of slots, a 0/1 "same sequence, earlier slot" matrix times the chunks' outer
    products (exact, no cumulative sum across sequences to cancel); across blocks, each sequence's sums carried."""
    C, f = chunk_size, _stat_dtype(q)
    cu = cu_seqlens.to(device=q.device, dtype=torch.long)
    layout = chunk_slots(cu, q.shape[1], C)
    carried = _carried(state, k, cu, C, f)
    q_slots, k_slots, lam_slots = (layout.gather(x[0]) for x in (q, k, lam))  # [S, C, H(, D)], in their dtypes
    # each block's result written in place, where no gradient needs the blocks apart (then they are joined)
    grad = torch.is_grad_enabled()
    out = torch.empty(q_slots.shape, dtype=f, device=q.device) if not grad else []
    per_block = max(1, packed_block_tokens(q.device) // C)
    for start in range(0, layout.count, per_block):  # blocks bound the working memory, as _contract_blocks does
        part = slice(start, start + per_block)
        seq = layout.sequence[part]
        # [nb, H, C, D], contiguous (what the batched matmuls read without copying again), float32; the keys shifted
        # by their sequence's centre where a token sits (the padding stays zero), in place
        qc, kc = (_contiguous(x[part].transpose(1, 2), f) for x in (q_slots, k_slots))
        kc.addcmul_(carried.centre[seq].unsqueeze(2), layout.filled[part, None, :, None].to(f), value=-1)
        block = _packed_block(carried, seq, layout.chunk_in_sequence[part] * C, qc, kc, lam_slots[part], sigma_scale,
                              None if grad else out[part])
        if grad:
            out.append(block)
    q_clean = layout.scatter((torch.cat(out) if grad else out).to(q.dtype)).unsqueeze(0)
    if not output_final_state:
        return q_clean, None
    N = cu.numel() - 1
    n_T = carried.n0 + (cu[1:] - cu[:-1]).to(f)
    seen = n_T.clamp_min(1)
    mean_T = carried.key_sum / seen.view(N, 1, 1)
    cov_T = carried.moment / seen.view(N, 1, 1, 1) - mean_T.unsqueeze(-1) * mean_T.unsqueeze(-2)
    mean = (mean_T + carried.centre) * (n_T > 0).view(N, 1, 1)
    return q_clean, CCQState(count=n_T.round().to(torch.int64), mean=mean, cov=cov_T)


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
    _check_sigma_scale(sigma_scale)
    B, T, H, D = q.shape
    if T != 1 or k.shape != q.shape or lam.shape != (B, 1, H):
        raise ValueError(f"contract_query_step takes one token: q {tuple(q.shape)}, k {tuple(k.shape)}, lam {tuple(lam.shape)}")
    if _fused_step(q, k, lam, state, sigma_scale):
        q_clean, mean1, count = contract_query_step_fused(q, k, lam, state, sigma_scale == "trace", TRACE_EPS)
        return q_clean, CCQState(count=count, mean=mean1, cov=state.cov)
    return _torch_step(q, k, lam, state, sigma_scale)


def _torch_step(q, k, lam, state: CCQState | None, sigma_scale: str) -> tuple[torch.Tensor, CCQState]:
    """contract_query_step in torch ops (the fused step's reference, in float64)."""
    B, _, H, D = q.shape
    f = _stat_dtype(q)
    qf, kf, lamf = q[:, 0].to(f), k[:, 0].to(f), lam[:, 0].to(f)
    n, mean, cov = _statistics(state, B, H, D, f, q.device)
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
        sigma_q = _apply_trace_scale(sigma_q, torch.diagonal(cov1, dim1=-2, dim2=-1).sum(-1))
    q_clean = (qf - lamf.unsqueeze(-1) * sigma_q).to(q.dtype).unsqueeze(1)
    count = (state.count if state is not None else torch.zeros(B, dtype=torch.int64, device=q.device)) + 1
    return q_clean, CCQState(count=count, mean=mean1, cov=cov1)


def _fused_step(q, k, lam, state: CCQState | None, sigma_scale: str) -> bool:
    """The one-kernel step (ccq_step_kernel.py) where Triton runs: on a GPU, and on the CPU under Triton's
    interpreter when fla's kernels are asked for, once it has agreed with the torch step in float64 on this device
    (models/kernel_trust.py); the torch form elsewhere and with gradients."""
    if not (runs_triton(q) and takes_fused_step(q, state)):
        return False
    return kernel_trust.trusted("CCQ step", q, True, {"H": q.shape[2], "D": q.shape[3]}, {"sigma_scale": sigma_scale},
                                lambda: _fused_step_trial(q, k, lam, state, sigma_scale))


def _fused_step_trial(q, k, lam, state: CCQState, sigma_scale: str) -> float:
    """The fused step on the call's first rows beside the torch step in float64: the largest relative difference of
    the contracted query, the new mean and Sigma (which the fused step must write where it lies)."""
    rows = min(kernel_trust.TRIAL_ROWS, q.shape[0])
    small = kernel_trust.leading_rows({"q": q, "k": k, "lam": lam, "count": state.count, "mean": state.mean,
                                       "cov": state.cov}, rows)
    own_state = CCQState(small["count"], small["mean"], small["cov"])
    expected_q, expected = _torch_step(small["q"].double(), small["k"].double(), small["lam"].double(),
                                       CCQState(small["count"], small["mean"].double(), small["cov"].double()),
                                       sigma_scale)
    got_q, mean1, _ = contract_query_step_fused(small["q"], small["k"], small["lam"], own_state,
                                                sigma_scale == "trace", TRACE_EPS)
    return max(kernel_trust.relative_difference(got_q, expected_q), kernel_trust.relative_difference(mean1, expected.mean),
               kernel_trust.relative_difference(own_state.cov, expected.cov))


def naive_contract_query(
    q: torch.Tensor,
    k: torch.Tensor,
    lam: torch.Tensor,
    sigma_scale: str = "none",
    prefix_keys: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reference: for every t, Sigma_t from keys[:t+1] by the definition, in float64. O(T^2 D^2).

    prefix_keys ``[B, T0, H, D]``: keys seen before this sequence (what an initial state summarises).
    """
    _check_sigma_scale(sigma_scale)
    q64, k64, lam64 = q.double(), k.double(), lam.double()
    if prefix_keys is not None:
        k_all = torch.cat([prefix_keys.double(), k64], dim=1)
        offset = prefix_keys.shape[1]
    else:
        k_all, offset = k64, 0
    out = torch.empty_like(q64)
    for t in range(q.shape[1]):
        keys = k_all[:, : offset + t + 1]  # [B, n, H, D]
        mu = keys.mean(dim=1, keepdim=True)
        centred = keys - mu
        sigma = torch.einsum("bnhi,bnhj->bhij", centred, centred) / keys.shape[1]
        sigma_q = torch.einsum("bhij,bhj->bhi", sigma, q64[:, t])
        if sigma_scale == "trace":
            sigma_q = sigma_q / (torch.diagonal(sigma, dim1=-2, dim2=-1).sum(-1) + TRACE_EPS).unsqueeze(-1)
        out[:, t] = q64[:, t] - lam64[:, t].unsqueeze(-1) * sigma_q
    return out
