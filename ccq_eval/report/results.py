"""The store read once, into the one model every table, figure and report page is a function of.

Two rules, written here only:
- the latest complete unit of each cell (label, suite, task, context length) is the cell's result: the one that
  finished last (its own finish time, which a merge keeps, so the order stores are merged in never decides; a
  rescore is stamped after its source, whatever the clocks say; equal times go by id); a reused unit (another
  label's run computed it) counts as its label's own; a failed unit never counts (its cell shows as missing);
- the latest run of each label (started last) says what the label's model is: its config, family, dtype and
  training length.
Metric values that are not finite numbers (which no run stores and ingest refuses; a hand-edited or foreign store
may hold one) are left out, as a failed unit is; `Store.untrusted_metrics` names them for the commands to say so.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property

import numpy as np
import pandas as pd

TRAINING_LENGTH_KEYS = ("training_context_length", "train_context_length")


def newest_last(unit) -> tuple:
    """Sort key: finish time, then id (never the order units reached this store: a merge's order would decide)."""
    return (unit.finished or "", unit.id)


def numeric(column: pd.Series) -> pd.Series:
    """A stored column as floats: text (``'NaN'``, a word) and infinities become NaN, so no reader meets them."""
    values = pd.to_numeric(column, errors="coerce").astype(float)
    return values.where(np.isfinite(values))


def sample_fields(text) -> dict:
    """A sample's per-suite fields (JSON text in the store) as a dict: empty where they are not a JSON object."""
    try:
        fields = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}


@dataclass(frozen=True)
class LabelRun:
    """What a label's latest run says about its model."""

    label: str
    run_id: str
    model_spec: str
    config: dict | None  # None: a run stored without a readable config (hand-made or ingested stores)
    dtype: str

    @property
    def family(self) -> str:
        """The model family as tables show it (families.family_name); "" without a config."""
        from ccq_eval.families import family_name

        return family_name(self.config) if self.config is not None else ""

    @property
    def training_length(self) -> int | None:
        """The training context length the config records, if any."""
        found = [self.config[k] for k in TRAINING_LENGTH_KEYS if isinstance((self.config or {}).get(k), int)]
        return found[-1] if found else None


@dataclass(frozen=True)
class Cell:
    label: str
    suite: str
    task: str
    context_length: int


class Results:
    """A store as the report reads it: ``cells`` (Cell -> its unit, store.rows.UnitRow), ``runs`` (label ->
    LabelRun), ``metrics`` (a frame of the cells' metric rows), ``samples(suite, columns)`` (a frame of the cells'
    sample rows); for the report's pages every run (``run_rows``), the failed units, and a unit's own metric rows and
    samples. Reads the store once per part, when first asked."""

    def __init__(self, store):
        self.store = store
        self._sample_frames: dict[tuple, object] = {}  # (suite, columns) -> the cells' samples, read once

    @cached_property
    def run_rows(self) -> list:
        """Every run (store.rows.RunRow with its unit counts), oldest first."""
        return self.store.reads.runs()

    @cached_property
    def unit_rows(self) -> list:
        """Every unit (store.rows.UnitRow), complete or failed, in the order they were stored."""
        return self.store.reads.units()

    @cached_property
    def runs(self) -> dict[str, LabelRun]:
        latest = {}
        for run in self.run_rows:  # oldest first: the latest run of a label wins
            config = run.model_config if isinstance(run.model_config, dict) else None
            latest[run.label] = LabelRun(run.label, run.id, run.model_spec, config, run.dtype)
        return latest

    @cached_property
    def cells(self) -> dict[Cell, object]:
        label_of = {run.id: run.label for run in self.run_rows}
        complete = [u for u in self.unit_rows if u.status == "complete"]
        latest = {}
        for unit in sorted(complete, key=newest_last):
            latest[Cell(label_of[unit.run_id], unit.suite, unit.task, unit.context_length)] = unit
        return latest

    def failed_units(self) -> list:
        return [u for u in self.unit_rows if u.status == "failed"]

    @cached_property
    def _metric_rows(self) -> dict[str, list]:
        by_unit: dict[str, list] = {}
        for row in self.store.reads.metrics():  # every unit's rows in one read, in the order stored
            by_unit.setdefault(row.unit_id, []).append(row)
        return by_unit

    def unit_metrics(self, unit_id: str) -> list:
        """A unit's metric rows as stored (store.rows.MetricRow)."""
        return self._metric_rows.get(unit_id, [])

    def unit_samples(self, unit_id: str) -> list:
        """A unit's samples as stored (store.rows.SampleRow), by index."""
        return self.store.reads.samples(unit_id)

    @cached_property
    def _unit_ids(self) -> set[str]:
        return {unit.id for unit in self.cells.values()}

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """One row per metric of each cell's unit: label, model, suite, task, context_length, metric, value, stderr,
        n, higher_is_better, is_primary, unit_id, finished, settings (JSON text); finite values only."""
        frame = self.store.reads.metrics_frame()
        if frame.empty:
            return frame
        frame = frame[frame.unit_id.isin(self._unit_ids)].copy()
        frame["value"], frame["stderr"], frame["n"] = numeric(frame.value), numeric(frame.stderr), numeric(frame.n)
        order = {unit.id: position for position, unit in enumerate(sorted(self.cells.values(), key=newest_last))}
        frame = frame[frame.value.notna()]
        return frame.iloc[frame.unit_id.map(order).argsort(kind="stable")].reset_index(drop=True)

    def samples(self, suite: str, columns: tuple[str, ...]) -> pd.DataFrame:
        """The cells' per-sample ``columns`` (of the samples table) for one suite, with label, task, context_length,
        settings and unit_id; ``score`` as a finite float (else NaN), ``fields`` as a dict."""
        key = (suite, tuple(columns))
        if key not in self._sample_frames:
            frame = self.store.reads.samples_frame(suite, columns)
            if not frame.empty:
                frame = frame[frame.unit_id.isin(self._unit_ids)].copy()
                if "score" in frame:
                    frame["score"] = numeric(frame.score)
                if "fields" in frame:
                    frame["fields"] = frame.fields.map(sample_fields)
            self._sample_frames[key] = frame
        return self._sample_frames[key]

    def labels(self) -> list[str]:
        return sorted(self.runs)

    @cached_property
    def partial_runs(self) -> dict[str, str]:
        """run id -> why it is partial: a shard of a job whose other shards are not all in this store."""
        from ccq_eval.store.merge_rules import missing_shards

        return missing_shards(self.run_rows)

    def partial_labels(self) -> dict[str, str]:
        """label -> why its row is partial (one of its runs is a shard of a job missing others)."""
        return {run.label: self.partial_runs[run.id] for run in self.run_rows if run.id in self.partial_runs}

    def families(self) -> dict[str, str]:
        """label -> its model family (the tables' family column)."""
        return {label: run.family for label, run in self.runs.items() if run.config is not None}

    def training_lengths(self) -> dict[str, int]:
        return {label: run.training_length for label, run in self.runs.items() if run.training_length is not None}


def results_of(source) -> Results:
    """A Results from a Results (itself) or a Store (read once from here on)."""
    return source if isinstance(source, Results) else Results(source)
