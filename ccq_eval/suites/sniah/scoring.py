"""S-NIAH's per-sample scoring: RULER's string match (what tasks/sniah's process_results calls) and
the partial-retrieval measure."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f]")


def ruler_postprocess(prediction: str) -> str:
    """RULER's: strip, turn control characters into newlines, strip again."""
    return _CONTROL.sub("\n", prediction.strip()).strip()


def ruler_string_match(prediction: str, references: list[str]) -> float:
    """Fraction of references found in the prediction, case-insensitively (RULER's string_match_all; an empty
    reference is never found, where RULER's ``in`` would find it in every prediction)."""
    text = ruler_postprocess(prediction).lower()
    return sum(bool(ref.strip()) and ref.lower() in text for ref in references) / len(references)


def all_values_found(prediction: str, values: list[str]) -> bool:
    """The early-stop rule: string match is 1 on this prefix, so on every continuation of it."""
    return ruler_string_match(prediction, values) == 1.0


def answer_prefix(prediction: str, value: str) -> float:
    """Fraction of the value reproduced correctly from its start (after RULER's post-processing and
    leading whitespace): partial retrieval that exact match hides."""
    text = ruler_postprocess(prediction).lstrip()
    matched = 0
    for produced, expected in zip(text, value):
        if produced.lower() != expected.lower():
            break
        matched += 1
    return matched / len(value)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return scored("sniah", doc, results)


def scored(suite: str, doc: dict, results: list[str], match=None) -> dict[str, float]:
    """The score over every length, and under each length's own metric (lm-eval's RULER habit); ``match``:
    (prediction, references) -> [0, 1], RULER's string_match_all unless given."""
    from ccq_eval.suites.plugin_args import per_length

    score = 100.0 * (match or ruler_string_match)(results[0], doc["outputs"])
    return {"score": score, **per_length(suite, doc, score)}


def score_at_length(items) -> float:
    """lm-eval's aggregation of one length's metric (the other lengths' documents left out)."""
    from ccq_eval.suites.plugin_args import at_length, mean

    return at_length(mean)(items)
