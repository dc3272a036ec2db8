"""Packed sequences laid out in chunks that never cross a sequence boundary, built on the device without reading
anything back to the host (the layout fla's ``cu_seqlens`` kernels use, built as fla's
``prepare_chunk_indices_static`` builds it for graph capture).

``cu_seqlens`` ``[N + 1]`` cuts ``T`` tokens into N sequences; sequence i takes ``ceil(len_i / C)`` chunk slots, in
order, and its last slot is zero-padded. How many slots that is depends on the lengths, which the host does not
know without a sync, so the layout has a fixed number: ``ceil(T / C) + N``, the most the lengths can need; slots
past the last sequence's are empty (all padding). Every shape follows from ``T``, ``N`` and ``C`` alone."""

from __future__ import annotations

from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class ChunkSlots:
    """Where each token sits: slot ``s`` holds sequence ``sequence[s]``'s chunk number ``chunk_in_sequence[s]``."""

    chunk: int
    sequence: torch.Tensor  # [S] long: the slot's sequence (the last one for empty slots, which hold no token)
    chunk_in_sequence: torch.Tensor  # [S] long
    filled: torch.Tensor  # [S, C] bool: the position holds a token
    token_place: torch.Tensor  # [T] long: each token's flat place (slot * C + position)

    @property
    def count(self) -> int:
        return self.sequence.shape[0]

    def gather(self, x: torch.Tensor) -> torch.Tensor:
        """``[T, ...]`` -> ``[S, C, ...]``, zeros where no token sits."""
        out = x.new_zeros(self.count * self.chunk, *x.shape[1:])
        out.index_copy_(0, self.token_place, x)
        return out.view(self.count, self.chunk, *x.shape[1:])

    def scatter(self, y: torch.Tensor) -> torch.Tensor:
        """``[S, C, ...]`` -> ``[T, ...]``: each token's value back in token order."""
        return y.reshape(self.count * self.chunk, *y.shape[2:]).index_select(0, self.token_place)


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
    start = cu[sequence] + chunk_in_sequence * chunk
    filled = (start[:, None] + torch.arange(chunk, device=device)) < cu[sequence + 1][:, None]
    filled &= (slots < offsets[-1])[:, None]
    token = torch.arange(tokens, device=device)
    owner = torch.searchsorted(cu[1:], token, right=True)
    local = token - cu[owner]
    token_place = (offsets[owner] + local // chunk) * chunk + local % chunk
    return ChunkSlots(chunk, sequence, chunk_in_sequence, filled, token_place)
