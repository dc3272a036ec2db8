"""LongBench's per-sample scoring as its official eval.py does it (what tasks/longbench's
process_results calls): the first-line rule for trec / triviaqa / samsum, then the best score over
the gold answers, starting from 0 (so an empty answer list scores 0), x100."""

from __future__ import annotations

from ccq_eval.suites.longbench.metrics import METRICS
from ccq_eval.suites.longbench.tasks import TASKS


def score(task: str, prediction: str, answers: list[str], all_classes: list[str]) -> float:
    spec = TASKS[task]
    if spec.first_line:
        prediction = prediction.lstrip("\n").split("\n")[0]
    metric = METRICS[spec.metric]
    best = 0.0
    for truth in answers:
        best = max(best, metric(prediction, truth, all_classes=all_classes))
    return 100.0 * best


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """The score over every budget, and under each budget's own metric (lm-eval's RULER habit)."""
    from ccq_eval.suites.plugin_args import per_length

    value = score(doc["task"], results[0], doc["answers"], doc["all_classes"])
    return {"score": value, **per_length("longbench", doc, value)}


def score_at_length(items) -> float:
    from ccq_eval.suites.plugin_args import at_length, mean

    return at_length(mean)(items)
