"""The generate stage of a generating suite: its frozen prompts as the engine's requests, handed to the evaluand's
one generating method (``Evaluand.generate``: ccq-eval's engine for a checkpoint, or whatever else a run evaluates), and the text back as lm-eval returns it. The prompt ids, stop strings and text are generation/text.py's,
which `CCQEvalLM.generate_until` uses too: a plugin under stock lm-eval gives the same tokens and text."""

from __future__ import annotations

from dataclasses import dataclass

from ccq_eval.generation.text import Ask  # noqa: F401 - what a driver builds, one per sample
from ccq_eval.suites.driver import Generated


@dataclass(frozen=True)
class Answer:
    text: str  # decoded, cut at the first stop string (lm-eval's postprocessing)
    continuation_nll: float | None  # of Ask.score, when asked of a model that scores text


def generated_texts(model, asks: list[Ask], budget: int, settings: dict | None = None) -> Generated | None:
    """The generate stage of a suite that keeps only each answer's text: a driver.Generated (``settings``: its unit
    notes), or None on a data-parallel rank other than 0 (rank 0 gathers every rank's share)."""
    answers = generate_answers(model, asks, budget)
    if answers is None:
        return None
    return Generated({index: {"prediction": a.text} for index, a in answers.items()}, dict(settings or {}))


def generate_answers(model, asks: list[Ask], budget: int) -> dict[int, Answer] | None:
    """Each ask's answer by sample index; None on a data-parallel rank other than 0 (rank 0 gathers every rank's
    share). A prompt that does not fit ``budget`` with its generated tokens fails the unit (PromptTooLong)."""
    from ccq_eval.generation.text import completion_text, engine_request

    tokenizer = model.tokenizer
    requests = [engine_request(ask, tokenizer, budget, scores=model.scores_text) for ask in asks]
    results = model.generate(requests)
    if results is None:
        return None
    return {ask.index: Answer(completion_text(tokenizer, result.tokens, request.until), result.continuation_nll)
            for ask, request, result in zip(asks, requests, results)}
