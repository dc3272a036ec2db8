"""What one prompt asks of generation, and when its row stops.

A row stops at the first of: ``max_new_tokens`` tokens; a token of ``stop_ids`` (kept in the output, as transformers'
EOS is; it may not be the first ``min_new_tokens`` tokens); a string of ``until`` in its decoded continuation (found
in the last few tokens, as lm-eval's ``MultiTokenEOSCriteria`` looks: lm-eval cuts the text at the string later);
its ``stop_when`` predicate holding on the decoded continuation."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable


@dataclass(frozen=True)
class Request:
    prompt: tuple[int, ...]
    max_new_tokens: int
    stop_ids: frozenset[int] = frozenset()
    min_new_tokens: int = 0
    until: tuple[str, ...] = ()
    stop_when: Callable[[str], bool] | None = None
    score: tuple[int, ...] = ()  # a continuation to teacher-force from the prompt's prefill: its mean NLL per token

    def __post_init__(self):
        # a row generates its first token from the prefill: fewer than one to generate cannot be honoured
        if not isinstance(self.max_new_tokens, int) or self.max_new_tokens < 1:
            raise ValueError(f"max_new_tokens {self.max_new_tokens!r}: a request generates at least 1 token")
        if not 0 <= self.min_new_tokens <= self.max_new_tokens:
            raise ValueError(f"min_new_tokens {self.min_new_tokens!r}: must be in [0, max_new_tokens "
                             f"{self.max_new_tokens}]")
        if not self.prompt:
            raise ValueError("prompt: a request needs at least one prompt token")


@dataclass
class Result:
    tokens: list[int] = field(default_factory=list)  # the generated tokens (a stop token included)
    continuation_nll: float | None = None  # mean NLL per token of ``Request.score``, when asked
    predicate_steps: int = 0  # tokens decoded while a ``stop_when`` predicate was asked


class StopRule:
    """Whether a row is done after its newest token; asks the tokenizer only for what the request names."""

    def __init__(self, request: Request, tokenizer):
        self.request, self.tokenizer = request, tokenizer
        # lm-eval's lookback: the stop string's own tokens and two more (a model may split it differently)
        self.lookback = max((len(tokenizer.encode(s, add_special_tokens=False)) + 2 for s in request.until), default=0)

    def done(self, result: Result) -> bool:
        request, tokens = self.request, result.tokens
        finished = len(tokens) >= request.max_new_tokens or tokens[-1] in request.stop_ids
        if not finished and self.lookback:
            finished = any(s in self.tokenizer.decode(tokens[-self.lookback:]) for s in request.until)
        if request.stop_when is not None:  # asked after every token while the row runs
            result.predicate_steps += 1
            finished = bool(request.stop_when(self.tokenizer.decode(tokens, skip_special_tokens=True))) or finished
        return finished

    def banned(self, generated: int) -> frozenset[int]:
        """Token ids the next token may not be (a stop token before ``min_new_tokens``)."""
        return self.request.stop_ids if generated < self.request.min_new_tokens else frozenset()


def greedy(logits, banned: list[frozenset[int]]) -> list[int]:
    """The greedy next token of each row of ``logits`` (rows x vocabulary), a row's banned ids excluded."""
    if any(banned):
        logits = logits.clone()
        for row, ids in enumerate(banned):
            if ids:
                logits[row, list(ids)] = float("-inf")
    return logits.argmax(-1).tolist()
