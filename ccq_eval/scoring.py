"""Per-sample scorers the task plugins call (lm-eval's process_results)."""

from __future__ import annotations

import re

_CONTROL = re.compile(r"[\x00-\x1f]")


def ruler_postprocess(prediction: str) -> str:
    """RULER's: strip, turn control characters into newlines, strip again."""
    return _CONTROL.sub("\n", prediction.strip()).strip()


def ruler_string_match(prediction: str, references: list[str]) -> float:
    """Fraction of references found in the prediction, case-insensitively (RULER's string_match_all)."""
    text = ruler_postprocess(prediction).lower()
    return sum(ref.lower() in text for ref in references) / len(references)


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


def sniah_process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return {"score": 100.0 * ruler_string_match(results[0], doc["outputs"])}


def longbench_score(task: str, prediction: str, answers: list[str], all_classes: list[str]) -> float:
    """LongBench's eval.py scorer for one prediction, x100.

    The metric functions are lm-eval's copies of LongBench's (token F1, ROUGE-L, classification, code
    similarity). lm-eval's per-task wrappers strip() every prediction first; eval.py does not, and
    for TRC / TQA / SSM it keeps the first line after leading newlines: that is what is done here.
    """
    from lm_eval.tasks.longbench import metrics

    from ccq_eval.data.longbench import TASKS

    spec = TASKS[task]
    if spec.first_line:
        prediction = prediction.lstrip("\n").split("\n")[0]
    metric = getattr(metrics, spec.metric)
    return 100.0 * max(metric(prediction, truth, all_classes=all_classes) for truth in answers)


def longbench_process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return {"score": longbench_score(doc["task"], results[0], doc["answers"], doc["all_classes"])}
