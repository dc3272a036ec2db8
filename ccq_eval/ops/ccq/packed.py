"""CCQ's read for packed sequences (fla's ``cu_seqlens``) as one computation: every sequence's chunks side by side in
chunk slots that never cross a sequence boundary, built on the device without reading anything back to the host (the
layout fla's ``cu_seqlens`` kernels use, built as fla's ``prepare_chunk_indices_static`` builds it for graph
capture).

Packed sequences laid out in chunks that never cross a sequence boundary, built on the device without reading
anything back to the host (the layout fla's ``cu_seqlens`` kernels use, built as fla's
``prepare_chunk_indices_static`` builds it for graph capture).

``cu_seqlens`` ``[N + 1]`` cuts ``T`` tokens into N sequences; sequence i takes ``ceil(len_i / C)`` chunk slots, in
order, and its last slot is zero-padded. How many slots that is depends on the lengths, which the host does not
know without a sync, so the layout has a fixed number: ``ceil(T / C) + N``, the most the lengths can need; slots
past the last sequence's are empty (all padding). Every shape follows from ``T``, ``N`` and ``C`` alone."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ccq_eval.ops import fp32_matmul
from ccq_eval.ops.ccq import state as shared  # shared.BLOCK_TOKENS read at each call (tests set it)
from ccq_eval.ops.ccq.state import CCQState, contracted_read, stat_dtype, statistics


@dataclass(frozen=True)
class ChunkSlots:
    """Where each token sits: slot ``s`` holds sequence ``sequence[s]``'s chunk number ``chunk_in_sequence[s]``, its
    positions the tokens ``tokens[s]`` (``T``, one past the last token, where no token sits)."""

    chunk: int
    sequence: torch.Tensor  # [S] long: the slot's sequence (the last one for empty slots, which hold no token)
    chunk_in_sequence: torch.Tensor  # [S] long
    filled: torch.Tensor  # [S, C] bool: the position holds a token
    tokens: torch.Tensor  # [S, C] long: the token at each position, T where none sits

    @property
    def count(self) -> int:
        return self.sequence.shape[0]

    def rows(self, x: torch.Tensor, part: slice) -> torch.Tensor:
        """``x [T, ...]``'s tokens in the slots ``part``: ``[nb, C, ...]`` in x's dtype, zeros where no token sits
        (only these slots' tokens are read: nothing the size of all of x is made)."""
        tokens, filled = self.tokens[part], self.filled[part]
        if x.shape[0] == 0:
            return x.new_zeros(*tokens.shape, *x.shape[1:])
        taken = x.index_select(0, tokens.flatten().clamp(max=x.shape[0] - 1))
        taken = taken.masked_fill_(~filled.reshape(-1, *([1] * (x.dim() - 1))), 0)
        return taken.view(*tokens.shape, *x.shape[1:])


def chunk_slots(cu_seqlens: torch.Tensor, tokens: int, chunk: int) -> ChunkSlots:
    """The slot layout of ``tokens`` packed tokens cut by ``cu_seqlens``, in chunks of ``chunk``."""
    device = cu_seqlens.device
    cu = cu_seqlens.to(torch.long)
    n = cu.numel() - 1
    lengths = cu[1:] - cu[:-1]
    offsets = torch.nn.functional.pad(((lengths + chunk - 1) // chunk).cumsum(0), (1, 0))  # first slot of each
    slots = torch.arange(-(-tokens // chunk) + n, device=device)
    # the sequence whose slots contain s: the last i with offsets[i] <= s (empty sequences own no slot)
    sequence = (torch.searchsorted(offsets, slots, right=True) - 1).clamp_(0, n - 1)
    chunk_in_sequence = slots - offsets[sequence]
    at = cu[sequence][:, None] + chunk_in_sequence[:, None] * chunk + torch.arange(chunk, device=device)
    filled = (at < cu[sequence + 1][:, None]) & (slots < offsets[-1])[:, None]
    return ChunkSlots(chunk, sequence, chunk_in_sequence, filled, torch.where(filled, at, tokens))


# packed sequences on a GPU go through in blocks of this many tokens' chunk slots: fewer blocks are fewer launches;
# a block holds three [slots, H, D, D] float32 tensors (768 MB at the 1.3B GLA shape) and its "same sequence,
# earlier slot" matmul costs slots^2 H D^2 multiply-adds (17 GFLOP), a few hundredths of a millisecond on tensor cores
PACKED_BLOCK_TOKENS = 16384


def _first_chunk_mean(k: torch.Tensor, cu: torch.Tensor, chunk_size: int, f: torch.dtype) -> torch.Tensor:
    """Each packed sequence's mean of its first ``chunk_size`` keys (``k [T, H, D]``; 0 for an empty sequence)."""
    lengths = cu[1:] - cu[:-1]
    within = torch.arange(chunk_size, device=k.device)
    place = (cu[:-1, None] + within).clamp_(max=max(k.shape[0] - 1, 0))
    taken = (within < lengths[:, None]).to(f)  # [N, C]
    # only the keys taken are cast (casting all of k first would hold a float32 copy of every key at once)
    keys = k[place].to(f) if k.shape[0] else k.new_zeros(*place.shape, *k.shape[1:], dtype=f)
    return torch.einsum("nc,nchd->nhd", taken, keys) / taken.sum(1).clamp_min(1)[:, None, None]


def packed_block_tokens(device: torch.device) -> int:
    """PACKED_BLOCK_TOKENS on a GPU; on a CPU, whose matmuls are slow and launches cheap, BLOCK_TOKENS."""
    return shared.BLOCK_TOKENS if device.type == "cpu" else PACKED_BLOCK_TOKENS


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
    n0, carried_mean, carried_cov = statistics(state, N, H, D, f, k.device)
    has_state = (n0 > 0).view(N, 1, 1)
    centre = torch.where(has_state, carried_mean, _first_chunk_mean(k[0], cu, C, f)).detach()
    d0 = (carried_mean - centre) * has_state
    moment = n0.view(N, 1, 1, 1) * (carried_cov + d0.unsqueeze(-1) * d0.unsqueeze(-2))
    return _Carried(n0, centre, n0.view(N, 1, 1) * d0, moment,
                    torch.diagonal(moment, dim1=-2, dim2=-1).sum(-1).double())


def _packed_block(carried: _Carried, seq, first_token, qc, kc, lam, sigma_scale) -> torch.Tensor:
    """One block of chunk slots (``qc, kc [nb, H, C, D]`` contiguous, float32, keys shifted; ``seq`` each slot's
    sequence; ``first_token`` the index in its sequence of each slot's first token): the block's contracted queries
    ``[nb, C, H, D]``, and the carried sums moved past it (in place)."""
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
    read = contracted_read(qc.transpose(1, 2), lam, sums.transpose(1, 2), second.transpose(1, 2), norms.transpose(1, 2).to(f),
                 n_t.view(nb, C, 1, 1), sigma_scale)
    mm_add_(carried.key_sum.view(1, N, -1), owns[None], totals.view(1, nb, -1), exact_left=True)
    mm_add_(carried.moment.view(1, N, -1), owns[None], outer.view(1, nb, -1), exact_left=True)
    carried.sq_norm = carried.sq_norm + owns.double() @ sq.sum(-1)
    return read


def contract_packed(q, k, lam, state, chunk_size, cu_seqlens, sigma_scale, output_final_state):
    """contract_query for N sequences packed along time, as one computation: every sequence's chunks side by side
    in chunk slots that never cross a boundary (``chunk_slots`` above), no Python loop over sequences and no value read
    back to the host, so the ops dispatched depend on T and N only through the number of blocks of slots.

    The statistics entering a chunk are its sequence's carried ones plus the outer products of its sequence's
    earlier chunks: inside a block of slots, a 0/1 "same sequence, earlier slot" matrix times the chunks' outer
    products (exact, no cumulative sum across sequences to cancel); across blocks, each sequence's sums carried.

    Memory: a block reads its own slots' tokens (in float32 only there) and writes its contracted queries into the
    result in q's dtype, so beyond the result the read holds one block's working set, whatever T is."""
    C, f = chunk_size, stat_dtype(q)
    T, H, D = q.shape[1:]
    cu = cu_seqlens.to(device=q.device, dtype=torch.long)
    layout = chunk_slots(cu, T, C)
    carried = _carried(state, k, cu, C, f)
    grad = torch.is_grad_enabled()
    # the result, one row more: the positions where no token sits write there (each block's write is one
    # index_copy, no mask read back); where gradients are needed the blocks are joined and written once
    q_clean = torch.empty(T + 1, H, D, dtype=q.dtype, device=q.device)
    blocks = []
    per_block = max(1, packed_block_tokens(q.device) // C)
    for start in range(0, layout.count, per_block):  # blocks bound the working memory, as _contract_blocks does
        part = slice(start, start + per_block)
        seq = layout.sequence[part]
        # [nb, H, C, D], contiguous (what the batched matmuls read without copying again), float32; the keys shifted
        # by their sequence's centre where a token sits (the padding stays zero), in place
        qc, kc = (_contiguous(layout.rows(x[0], part).transpose(1, 2), f) for x in (q, k))
        kc.addcmul_(carried.centre[seq].unsqueeze(2), layout.filled[part, None, :, None].to(f), value=-1)
        read = _packed_block(carried, seq, layout.chunk_in_sequence[part] * C, qc, kc, layout.rows(lam[0], part),
                             sigma_scale)
        if grad:
            blocks.append(read)
        else:
            q_clean.index_copy_(0, layout.tokens[part].flatten(), read.reshape(-1, H, D).to(q.dtype))
    if grad:
        q_clean = torch.zeros(T + 1, H, D, dtype=q.dtype, device=q.device).index_copy(
            0, layout.tokens.flatten(), torch.cat(blocks).reshape(-1, H, D).to(q.dtype))
    q_clean = q_clean[:T].unsqueeze(0)
    if not output_final_state:
        return q_clean, None
    N = cu.numel() - 1
    n_T = carried.n0 + (cu[1:] - cu[:-1]).to(f)
    seen = n_T.clamp_min(1)
    mean_T = carried.key_sum / seen.view(N, 1, 1)
    cov_T = carried.moment / seen.view(N, 1, 1, 1) - mean_T.unsqueeze(-1) * mean_T.unsqueeze(-2)
    mean = (mean_T + carried.centre) * (n_T > 0).view(N, 1, 1)
    return q_clean, CCQState(count=n_T.round().to(torch.int64), mean=mean, cov=cov_T)
