"""What the generating suites call: ``Generator.generate(requests)``. ``EngineGenerator`` answers it for a loaded
checkpoint with the engine, across data-parallel ranks; anything else a run evaluates (a model that answers from the
prompt, a remote model) implements the same two members, so no driver asks what kind of model it holds."""

from __future__ import annotations

from dataclasses import replace
from typing import Protocol, runtime_checkable

from ccq_eval.generation.ranks import Ranks, across_ranks
from ccq_eval.generation.request import Request, Result


@runtime_checkable
class Generator(Protocol):
    # whether the model scores text (a continuation teacher-forced from the decoding prefill); a model that only
    # generates leaves its per-sample likelihoods empty
    scores_text: bool

    def generate(self, requests: list[Request]) -> list[Result] | None:
        """Greedy continuations of ``requests`` (prompt ids, stop rules, a continuation to score), in their order.
        Across data-parallel ranks: each rank runs its share and rank 0 returns every result, the others None."""


class EngineGenerator:
    """The engine over a loaded checkpoint at a fixed batch size; the model's EOS ids are added to each request's
    stop ids."""

    scores_text = True

    def __init__(self, model, tokenizer, batch_size: int, ranks: Ranks = Ranks()):
        self.model, self.tokenizer, self.batch_size, self.ranks = model, tokenizer, batch_size, ranks

    def generate(self, requests: list[Request]) -> list[Result] | None:
        return across_ranks(requests, self._engine, self.ranks)

    def generate_here(self, requests: list[Request]) -> list[Result]:
        """In this process alone (lm-eval's evaluator has split its requests across ranks already), longest first, so
        the batch refills from the queue as rows finish; the results in the requests' order."""
        return across_ranks(requests, self._engine)

    def _engine(self, requests: list[Request]) -> list[Result]:
        from ccq_eval.generation.engine import generate
        from ccq_eval.generation.text import model_stop_ids

        stops = model_stop_ids(self.model, self.tokenizer)
        return generate(self.model, self.tokenizer, [replace(r, stop_ids=r.stop_ids | stops) for r in requests],
                        self.batch_size)
