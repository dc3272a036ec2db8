"""CCQ's read, the operator's entry points: ``contract_query`` (whole or packed sequences, lam given) and
``contract_read`` (a layer's prefill from its raw q and k: Gated DeltaNet's norms, the gate, the read). Each takes the
one-launch pass (fused_chunk.py) where Triton runs and the pass has agreed with its reference on the device, and the
torch forms otherwise (chunk.py, packed.py: the reference, and what gradients go through)."""

from __future__ import annotations

import torch

from ccq_eval.ops import trust
from ccq_eval.ops.ccq.chunk import torch_contract_query
from ccq_eval.ops.ccq import fused_chunk
from ccq_eval.ops.ccq.state import TRACE_EPS, CCQState, ReadGate, check_sigma_scale
from ccq_eval.ops.ccq.step import lam_source, normalized
from ccq_eval.ops.in_place import runs_triton


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
    check_sigma_scale(sigma_scale)
    if q.shape != k.shape or lam.shape != q.shape[:3]:
        raise ValueError(f"contract_query: q {tuple(q.shape)}, k {tuple(k.shape)} and lam {tuple(lam.shape)} do not "
                         "fit [B, T, H, D] / [B, T, H]")
    if cu_seqlens is not None and q.shape[0] != 1:
        raise ValueError(f"contract_query: with cu_seqlens the batch size must be 1, got {q.shape[0]}")
    q_clean, _, final = contract_read(q, k, lam, initial_state, output_final_state, chunk_size, cu_seqlens,
                                      sigma_scale)
    return q_clean, final


TRIAL_SEQUENCES = 4  # a trial's sequences: the call's first few, each cut to its first TRIAL_TOKENS tokens in all
TRIAL_TOKENS = 1024


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
        q_clean, k_read, final = fused_chunk.fused_read(q1, k1, lam1, state, chunk_size, cu, sigma_scale == "trace",
                                                        TRACE_EPS, output_final_state, normalize, read_dtype)
        new = CCQState(*final) if final is not None else None
        return q_clean.view(q.shape), (k_read.view(k.shape) if normalize else k), new
    return reference_read(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize,
                          read_dtype)


def reference_read(q, k, lam, state, output_final_state, chunk_size=64, cu_seqlens=None, sigma_scale="none",
                   normalize=False, read_dtype=None) -> tuple[torch.Tensor, torch.Tensor, CCQState | None]:
    """contract_read in torch ops: the norms, the gate, then the chunked or packed composition."""
    if normalize:
        q, k = normalized(q, k, read_dtype or q.dtype)
    lam = lam if isinstance(lam, torch.Tensor) else lam.lam(q)
    q_clean, new = torch_contract_query(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale)
    return q_clean, k, new


def _fused(q, k, lam, state, output_final_state, chunk_size, cu_seqlens, sigma_scale, normalize, read_dtype) -> bool:
    """The one-launch pass where Triton runs (a GPU; the CPU under Triton's interpreter when fla's kernels are asked
    for), once it has agreed with its reference in float64 on this device (ops/trust.py)."""
    if not (runs_triton(q) and fused_chunk.takes_fused_read(q, state)):
        return False
    options = {"sigma_scale": sigma_scale, "lam": lam_source(lam),
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
    (q1, cu), (k1, _) = _packed_layout(q, cu_seqlens), _packed_layout(k, cu_seqlens)
    cuts = [min(int(c), TRIAL_TOKENS) for c in cu[:TRIAL_SEQUENCES + 1].tolist()]  # read back: first use only
    T, n = cuts[-1], len(cuts) - 1
    small_cu = torch.tensor(cuts, dtype=cu.dtype, device=q.device)
    small_q, small_k = q1[:, :T].clone(), k1[:, :T].clone()
    small_lam = _packed_layout(lam, cu_seqlens)[0][:, :T].clone() if isinstance(lam, torch.Tensor) else lam
    small_state = (CCQState(*(x[:n].clone() for x in (state.count, state.mean, state.cov)))
                   if state is not None else None)
    got_q, got_k, final = fused_chunk.fused_read(small_q, small_k, small_lam, small_state, chunk_size, small_cu,
                                                 sigma_scale == "trace", TRACE_EPS, output_final_state, normalize,
                                                 read_dtype)
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
