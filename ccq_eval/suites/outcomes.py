"""What the runner hands a driver (Unit) and what a driver hands back for each unit (UnitOutcome),
with the helpers every driver uses to produce them. Part of the suite interface (base.py)."""

from __future__ import annotations

import logging
import traceback
from dataclasses import dataclass, field


@dataclass
class Unit:
    suite: str
    task: str
    context_length: int
    settings: dict
    data_key: dict
    unit_key: str


@dataclass
class UnitOutcome:
    """What a driver hands back for one unit; the runner writes it in one transaction."""

    status: str  # complete | failed
    reason: str | None = None
    metrics: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    fingerprint: str | None = None
    settings: dict = field(default_factory=dict)  # recorded additions (counts of skipped items, ...)
    raw: dict | None = None


def failure(exc: BaseException) -> UnitOutcome:
    text = str(exc).splitlines()[0] if str(exc) else ""
    logging.getLogger(__name__).debug("unit failed\n%s", traceback.format_exc())
    return UnitOutcome(status="failed", reason=f"{exc.__class__.__name__}: {text}"[:500])


def evaluate_each(units, evaluate):
    """(unit, outcome) per unit; an exception fails that unit with its reason and the run goes on."""
    for unit in units:
        try:
            yield unit, evaluate(unit)
        except Exception as exc:  # noqa: BLE001 - any failure fails this unit, with its reason
            yield unit, failure(exc)


def mean_and_stderr(scores: list[float]) -> tuple[float, float | None]:
    """The mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(scores)
    mean = sum(scores) / n
    return mean, ((sum((s - mean) ** 2 for s in scores) / (n - 1) / n) ** 0.5 if n > 1 else None)


def logged_entries(out: dict, task: str, expected: int) -> list[tuple[dict, float]]:
    """lm-eval's logged samples of one task in document order, each with its finite score: a count
    that differs from the prompts sent, or a NaN / infinite score, fails the unit."""
    import math

    logged = sorted(out["samples"][task], key=lambda e: e["doc_id"])
    if len(logged) != expected:
        raise RuntimeError(f"lm-eval returned {len(logged)} samples for {expected} prompts")
    entries = []
    for entry in logged:
        score = float(entry["score"])
        if not math.isfinite(score):
            raise RuntimeError(f"non-finite score for {task} sample {entry['doc']['index']}")
        entries.append((entry, score))
    return entries
