"""The protocol's per-sample score, as its tasks' contains_score: 1 when any answer occurs in the prediction,
case-insensitively (the prediction is the generation up to its first newline), x100; and what tasks/recall's
process_results calls."""

from __future__ import annotations

import re


def contains(prediction: str, answers: list[str]) -> float:
    """An empty answer never counts (the data checks refuse one; the reference's search would find it anywhere)."""
    return 100.0 * max(float(bool(answer.strip()) and bool(re.search(re.escape(answer), prediction, re.IGNORECASE)))
                       for answer in answers)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """The score over every length, and under each length's own metric (lm-eval's RULER habit)."""
    from ccq_eval.suites.plugin_args import per_length

    value = contains(results[0], doc["answers"])
    return {"score": value, **per_length("recall", doc, value)}  # stored as the unit's "contains"


def score_at_length(items) -> float:
    from ccq_eval.suites.plugin_args import at_length, mean

    return at_length(mean)(items)
