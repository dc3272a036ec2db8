"""What a suite's driver may ask of the model it evaluates, beyond lm-eval's ``LM`` interface.

The real adapter (wrapper.CCQEvalLM) implements it over a checkpoint; anything else a run evaluates (a
model that answers from the prompt, a remote model) implements the same few members, so no driver asks
what kind of model it holds.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ContextManager, Protocol, runtime_checkable

if TYPE_CHECKING:  # decoding.py loads torch; the runner imports this module while planning
    from ccq_eval.lm.decoding import DecodingHooks, PromptKey


@runtime_checkable
class ModelAdapter(Protocol):
    rank: int  # this process's data-parallel rank (0 writes the store)
    world_size: int  # data-parallel processes sharing each evaluation
    # whether the model scores text (loglikelihood, decoding hooks, prompt keys); a model that only
    # generates leaves its per-sample likelihoods empty
    scores_text: bool

    def budget(self, max_length: int) -> ContextManager:
        """The context budget of the evaluations made inside the block."""

    def decoding(self, hooks: "DecodingHooks | None") -> ContextManager:
        """One evaluation's decoding hooks, for the duration of the block."""

    def prompt_key(self, prompt: str) -> "PromptKey":
        """A prompt's token ids as generation encodes them (the key of its row in DecodingHooks); asked only
        of a model that scores text."""
