"""A generating unit's requests shared across data-parallel ranks (`accelerate launch` / torchrun): each rank runs every
world-size-th request of the longest-first order (so each rank's share is longest first too, and the shares are of
like length), and rank 0 gathers the results back into the requests' order; it alone writes the store. ``Ranks`` is
this process's place among them and the collectives lm-eval's evaluator asks for."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Callable, Sequence


@dataclass(frozen=True)
class Ranks:
    rank: int = 0
    world_size: int = 1

    @classmethod
    def from_environment(cls) -> "Ranks":
        """(rank, world size) under `accelerate launch` / torchrun (their env), initialising the process group (gloo
        on CPU, nccl on CUDA) if the launcher has not; rank 0 of 1 for a single process."""
        if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
            return cls()
        import torch
        import torch.distributed as dist

        if not dist.is_initialized():
            dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        return cls(dist.get_rank(), dist.get_world_size())

    def gather(self, obj, dst: int = 0) -> list | None:
        """``obj`` from every rank, as a list on ``dst`` (None elsewhere)."""
        if self.world_size == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def all_gather(self, tensor):
        """Every rank's ``tensor``, concatenated (a scalar as one element, as accelerate's gather)."""
        if self.world_size == 1:
            return tensor
        import torch
        import torch.distributed as dist

        tensor = tensor.reshape(1) if tensor.dim() == 0 else tensor
        parts = [torch.zeros_like(tensor) for _ in range(self.world_size)]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    def barrier(self) -> None:
        if self.world_size > 1:
            import torch.distributed as dist

            dist.barrier()


def longest_first(requests: Sequence) -> list[int]:
    """Request indices, longest prompt first (ties in the requests' order): the order the engine is fed."""
    return sorted(range(len(requests)), key=lambda i: -len(requests[i].prompt))


def across_ranks(requests: Sequence, run: Callable[[list], list], ranks: Ranks = Ranks()) -> list | None:
    """``run`` (requests -> results, in their order) over this rank's share; every result in the requests' order on
    rank 0, None on the others."""
    mine = longest_first(requests)[ranks.rank::ranks.world_size]
    results = run([requests[i] for i in mine])
    parts = ranks.gather(list(zip(mine, results)))
    if parts is None:
        return None
    ordered = [None] * len(requests)
    for part in parts:
        for index, result in part:
            ordered[index] = result
    return ordered
