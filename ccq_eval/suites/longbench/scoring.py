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
    return {"score": score(doc["task"], results[0], doc["answers"], doc["all_classes"])}
