"""Typed rows of the store's four tables, as the named reads hand them out: JSON columns parsed (None where
a stored text is not JSON), flags as booleans."""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field, fields


def parsed_json(text):
    """A JSON column's value, or None for text that is not JSON (an old or foreign store's)."""
    try:
        return json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        return None


def _from_row(cls, row: sqlite3.Row | dict, json_columns=(), flags=()):
    data = dict(row)
    values = {}
    for f in fields(cls):
        if f.name not in data:
            continue
        value = data[f.name]
        if f.name in json_columns:
            value = parsed_json(value)
        elif f.name in flags:
            value = bool(value)
        values[f.name] = value
    return cls(**values)


@dataclass(frozen=True)
class RunRow:
    id: str
    label: str
    model_spec: str
    weights_sha256: str
    model_config: dict | None
    ccq_overrides: dict | None
    dtype: str
    device: str
    batch_size: int
    seeds: dict | None
    command_line: str
    versions: dict | None
    git_sha: str | None
    started: str
    finished: str | None
    status: str
    units: int = 0  # how many units the run stored
    complete_units: int = 0

    @classmethod
    def of(cls, row) -> "RunRow":
        return _from_row(cls, row, json_columns=("model_config", "ccq_overrides", "seeds", "versions"))


@dataclass(frozen=True)
class UnitRow:
    id: str
    run_id: str
    suite: str
    task: str
    context_length: int
    unit_key: str
    status: str
    reason: str | None
    started: str
    finished: str
    dataset_fingerprint: str | None
    settings: dict | None
    reused_from: str | None = None  # the unit whose result this is (another label's run computed it)
    seq: int | None = None  # the order units were written into the store (None: a store read as it was, before 3)

    @classmethod
    def of(cls, row) -> "UnitRow":
        return _from_row(cls, row, json_columns=("settings",))


@dataclass(frozen=True)
class MetricRow:
    unit_id: str
    run_id: str
    label: str
    model: str
    suite: str
    task: str
    context_length: int
    metric: str
    value: float
    stderr: float | None
    n: int | None
    higher_is_better: bool
    is_primary: bool

    @classmethod
    def of(cls, row) -> "MetricRow":
        return _from_row(cls, row, flags=("higher_is_better", "is_primary"))


@dataclass(frozen=True)
class SampleRow:
    unit_id: str
    idx: int
    prompt_sha256: str | None
    target: str | None
    prediction: str | None
    score: float | None
    fields: dict | None

    @classmethod
    def of(cls, row) -> "SampleRow":
        return _from_row(cls, row, json_columns=("fields",))


@dataclass(frozen=True)
class UnitBundle:
    unit: UnitRow
    metrics: list[MetricRow] = field(default_factory=list)
    samples: list[SampleRow] = field(default_factory=list)


@dataclass(frozen=True)
class RunBundle:
    """A run with its units, each with its metric rows and samples (what an export writes)."""

    run: RunRow
    units: list[UnitBundle] = field(default_factory=list)
