"""CCQ's read for whole sequences, chunked: the only non-elementwise term, ``sum_{j<=t} k_j (k_j^T q_t)``, is causal
linear attention with values = keys and no decay: chunked torch matmuls at fp32 precision (fp32_matmul.py), or
fla's ``chunk_simple_gla`` kernel for measuring. Long sequences go through in blocks that carry the statistics;
packed sequences go to packed.py. ``torch_contract_query`` is contract_query (read.py) in these torch forms: the
one-launch pass's reference (fused_chunk.py), and what runs where Triton does not or gradients are needed."""

from __future__ import annotations

import torch

from ccq_eval.ops import fp32_matmul
from ccq_eval.ops.ccq.packed import contract_packed
from ccq_eval.ops.ccq import state as shared  # shared.BLOCK_TOKENS read at each call (tests set it)
from ccq_eval.ops.ccq.state import (CCQState, contracted_read, stat_dtype,
                                    statistics)

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
    if T <= shared.BLOCK_TOKENS:
        return _contract_dense(q, k, lam, state, chunk_size, sigma_scale, output_final_state)
    outs = []
    for start in range(0, T, shared.BLOCK_TOKENS):
        end = min(start + shared.BLOCK_TOKENS, T)
        out, state = _contract_dense(q[:, start:end], k[:, start:end], lam[:, start:end], state, chunk_size,
                                     sigma_scale, output_final_state=True)
        outs.append(out)
    return torch.cat(outs, dim=1), (state if output_final_state else None)


def _contract_dense(q, k, lam, state, chunk_size, sigma_scale, output_final_state):
    """contract_query for B independent, unpadded sequences."""
    B, T, H, D = q.shape
    f = stat_dtype(q)
    qf = q.to(f)
    n0, carried_mean, carried_cov = statistics(state, B, H, D, f, q.device)

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
    q_clean = contracted_read(qf, lam, key_sum, second_q, sq_norm, n_t, sigma_scale).to(q.dtype)

    final = None
    if output_final_state:
        n_T = n0 + T
        mean_T = key_sum[:, -1] / n_T.view(B, 1, 1)
        cov_T = p_T / n_T.view(B, 1, 1, 1) - mean_T.unsqueeze(-1) * mean_T.unsqueeze(-2)
        final = CCQState(count=n_T.round().to(torch.int64), mean=mean_T + centre, cov=cov_T)
    return q_clean, final


def torch_contract_query(q, k, lam, initial_state, output_final_state, chunk_size, cu_seqlens, sigma_scale):
    """contract_query in torch ops (the one-launch pass's reference): whole sequences chunked, in blocks of
    BLOCK_TOKENS; packed sequences as one computation over chunk slots (packed.py)."""
    with fp32_matmul.precision_for(q.dtype):  # statistics in float32; its matmuls as precise as the model needs
        if cu_seqlens is None:
            return _contract_blocks(q, k, lam, initial_state, chunk_size, sigma_scale, output_final_state)
        return contract_packed(q, k, lam, initial_state, chunk_size, cu_seqlens, sigma_scale, output_final_state)
