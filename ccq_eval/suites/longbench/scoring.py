"""LongBench's per-sample scoring (what tasks/longbench's process_results calls)."""

from __future__ import annotations

from ccq_eval.suites.longbench.tasks import TASKS


def score(task: str, prediction: str, answers: list[str], all_classes: list[str]) -> float:
    """LongBench's eval.py scorer for one prediction, x100.

    The metric functions are lm-eval's copies of LongBench's (token F1, ROUGE-L, classification, code
    similarity). lm-eval's per-task wrappers strip() every prediction first; eval.py does not, and
    for TRC / TQA / SSM it keeps the first line after leading newlines: that is what is done here.
    """
    from lm_eval.tasks.longbench import metrics

    spec = TASKS[task]
    if spec.first_line:
        prediction = prediction.lstrip("\n").split("\n")[0]
    metric = getattr(metrics, spec.metric)
    return 100.0 * max(metric(prediction, truth, all_classes=all_classes) for truth in answers)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return {"score": score(doc["task"], results[0], doc["answers"], doc["all_classes"])}
