"""LongBench's four English metrics as its official metrics.py defines them (the commit in tasks.py).

Written here rather than taken from lm-eval's copy, which differs: its code similarity skips blank
lines, where the official one takes the first line (after leading newlines) that has no `, # or //,
even one of only spaces. ROUGE-L and fuzz.ratio come from the packages the official code uses.
"""

from __future__ import annotations

import re
import string
from collections import Counter


def normalize_answer(text: str) -> str:
    """Lower case, no punctuation, no articles, single spaces (SQuAD's normalisation)."""
    text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


def f1_score(prediction: list[str], ground_truth: list[str]) -> float:
    common = Counter(prediction) & Counter(ground_truth)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(prediction), same / len(ground_truth)
    return 2 * precision * recall / (precision + recall)


def qa_f1_score(prediction: str, ground_truth: str, **_) -> float:
    return f1_score(normalize_answer(prediction).split(), normalize_answer(ground_truth).split())


def rouge_score(prediction: str, ground_truth: str, **_) -> float:
    from rouge import Rouge

    try:
        return Rouge().get_scores([prediction], [ground_truth], avg=True)["rouge-l"]["f"]
    except Exception:  # noqa: BLE001 - the official scorer gives 0 to anything rouge cannot score (e.g. empty)
        return 0.0


def classification_score(prediction: str, ground_truth: str, all_classes: list[str], **_) -> float:
    matched = [name for name in all_classes if name in prediction]
    # the official loop removes from the list it iterates over, which can skip an entry: kept as is
    for term in matched:
        if term in ground_truth and term != ground_truth:
            matched.remove(term)
    return 1.0 / len(matched) if ground_truth in matched else 0.0


def code_sim_score(prediction: str, ground_truth: str, **_) -> float:
    from fuzzywuzzy import fuzz

    first = ""
    for line in prediction.lstrip("\n").split("\n"):
        if "`" not in line and "#" not in line and "//" not in line:
            first = line
            break
    return fuzz.ratio(first, ground_truth) / 100


METRICS = {"qa_f1_score": qa_f1_score, "rouge_score": rouge_score, "classification_score": classification_score,
           "code_sim_score": code_sim_score}
