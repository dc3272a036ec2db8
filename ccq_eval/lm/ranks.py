"""A generating unit's requests shared across data-parallel ranks (`accelerate launch` / torchrun): each rank runs every
world-size-th request of the longest-first order (so each rank's share is longest first too, and the shares are of
like length), and rank 0 gathers the results back into the requests' order; it alone writes the store."""

from __future__ import annotations

from typing import Callable, Sequence


def longest_first(requests: Sequence) -> list[int]:
    """Request indices, longest prompt first (ties in the requests' order): the order the engine is fed."""
    return sorted(range(len(requests)), key=lambda i: -len(requests[i].prompt))


def across_ranks(requests: Sequence, run: Callable[[list], list], rank: int = 0, world_size: int = 1,
                 gather: Callable[[object], list | None] | None = None) -> list | None:
    """``run`` (requests -> results, in their order) over this rank's share; every result in the requests' order on
    rank 0, None on the others. ``gather``: an object from every rank, as a list on rank 0 (None elsewhere)."""
    mine = longest_first(requests)[rank::world_size]
    results = run([requests[i] for i in mine])
    if world_size == 1:
        parts = [list(zip(mine, results))]
    else:
        parts = gather(list(zip(mine, results)))
        if rank != 0:
            return None
    ordered = [None] * len(requests)
    for part in parts:
        for index, result in part:
            ordered[index] = result
    return ordered
