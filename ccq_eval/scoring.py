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


def sniah_process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return {"score": 100.0 * ruler_string_match(results[0], doc["outputs"])}
