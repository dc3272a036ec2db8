"""generation/ranks.py: a unit's requests shared across data-parallel ranks. Two ranks are played in one process (the
gather hands rank 0 what each rank returned): each runs every other request of the longest-first order, rank 0 gets
every result in the requests' order, the others None; the real two-process run is tests/run/test_runner_reliability.py."""

from __future__ import annotations

from dataclasses import dataclass

from ccq_eval.generation.ranks import Ranks, across_ranks, longest_first


@dataclass
class Prompt:
    prompt: tuple


class PlayedRanks(Ranks):
    """Rank ``rank`` of ``world_size`` whose gather returns what ``shares`` holds for the other ranks."""

    def __init__(self, rank, world_size, shares):
        super().__init__(rank, world_size)
        object.__setattr__(self, "shares", shares)

    def gather(self, obj, dst=0):
        self.shares[self.rank] = obj
        return [self.shares[r] for r in range(self.world_size)] if self.rank == dst else None


def test_longest_first_keeps_ties_in_order():
    requests = [Prompt((1,)), Prompt((1, 2, 3)), Prompt((1, 2)), Prompt((4, 5, 6))]
    assert longest_first(requests) == [1, 3, 2, 0]


def test_each_rank_runs_its_share_and_rank_0_gets_every_result_in_order():
    requests = [Prompt(tuple(range(n))) for n in (3, 7, 1, 5, 2)]
    ran, shares = {}, {}
    run = {rank: (lambda batch, rank=rank: ran.setdefault(rank, [len(r.prompt) for r in batch]) and
                  [len(r.prompt) * 10 for r in batch]) for rank in (0, 1)}
    assert across_ranks(requests, run[1], PlayedRanks(1, 2, shares)) is None  # rank 1 first: its share is held
    assert across_ranks(requests, run[0], PlayedRanks(0, 2, shares)) == [30, 70, 10, 50, 20]
    assert ran == {0: [7, 3, 1], 1: [5, 2]}  # every other request of the longest-first order, longest first
    assert across_ranks(requests, lambda batch: [len(r.prompt) for r in batch]) == [3, 7, 1, 5, 2]  # one process
