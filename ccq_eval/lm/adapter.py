"""What a suite's driver may ask of the model it evaluates, beyond lm-eval's ``LM`` interface.

The real adapter (wrapper.CCQEvalLM) implements it over a checkpoint; anything else a run evaluates (a
model that answers from the prompt, a remote model) implements the same few members, so no driver asks
what kind of model it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ContextManager, Protocol, runtime_checkable

if TYPE_CHECKING:  # the engine's types load nothing heavy, but the runner imports this module while planning
    from ccq_eval.generation.request import Request, Result


@runtime_checkable
class ModelAdapter(Protocol):
    rank: int  # this process's data-parallel rank (0 writes the store)
    world_size: int  # data-parallel processes sharing each evaluation
    # whether the model scores text (log-likelihoods, a continuation scored from the decoding prefill); a model that
    # only generates leaves its per-sample likelihoods empty
    scores_text: bool

    def budget(self, max_length: int) -> ContextManager:
        """The context budget of the lm-eval evaluations made inside the block."""

    def generate(self, requests: "list[Request]") -> "list[Result] | None":
        """Greedy continuations of ``requests`` (prompt ids, stop rules, a continuation to score), in their order;
        the generating suites' one call. Across data-parallel ranks: each rank runs its share and rank 0 returns
        every result, the others None."""
