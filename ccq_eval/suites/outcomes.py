"""What the runner hands a driver (Unit) and what a driver hands back for each unit (UnitOutcome: typed
Metric and Sample rows, without label or model, which the runner attaches when it writes), with the one
aggregator every suite uses (mean, standard error, no samples) and the helpers drivers share. Part of the
suite interface (base.py)."""

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


@dataclass(frozen=True)
class Metric:
    """One number of a unit. ``n`` counts what it was computed over; ``stderr`` is the mean's standard error."""

    name: str
    value: float
    stderr: float | None = None
    n: int | None = None
    higher_is_better: bool = True
    is_primary: bool = False


@dataclass(frozen=True)
class Sample:
    """One scored item of a unit, as the store keeps it (``fields``: what only its suite records)."""

    idx: int
    score: float
    target: str | None = None
    prediction: str | None = None
    prompt_sha256: str | None = None
    fields: dict = field(default_factory=dict)


class NoSamples(RuntimeError):
    """A unit with nothing to score: it fails with this reason (a mean of nothing is not a number)."""


def mean_metric(name: str, values: list[float], *, higher_is_better: bool = True, is_primary: bool = False) -> Metric:
    """The mean of per-sample values with its standard error (sample sd / sqrt(n); none for one sample)."""
    if not values:
        raise NoSamples(f"no samples to compute {name} over")
    mean, stderr = mean_and_stderr(values)
    return Metric(name, mean, stderr=stderr, n=len(values), higher_is_better=higher_is_better, is_primary=is_primary)


def prediction_counts(samples: list[Sample]) -> dict:
    """What a generation unit records beside its metrics: how many samples, how many predictions were empty
    (and a warning when all were: a weak model is a result, not a failure)."""
    empty = sum(1 for s in samples if not (s.prediction or "").strip())
    counts = {"n_samples": len(samples), "empty_predictions": empty}
    if samples and empty == len(samples):
        counts["warning"] = "every prediction is empty"
    return counts


@dataclass
class UnitOutcome:
    """What a driver hands back for one unit; the runner writes it in one transaction."""

    status: str  # complete | failed
    reason: str | None = None
    metrics: list[Metric] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
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
    if n == 0:
        raise NoSamples("no samples to average")
    mean = sum(scores) / n
    return mean, ((sum((s - mean) ** 2 for s in scores) / (n - 1) / n) ** 0.5 if n > 1 else None)
