"""The store as tidy DataFrames. Where a label has several complete units for one cell (reruns,
other runs), the latest one counts; failed units never reach a table (they show as missing cells)."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd

from ccq_eval.store import Store


def numeric(column: pd.Series) -> pd.Series:
    """A stored column as floats: text (``'NaN'``, a word) and infinities become NaN, so no reader meets them."""
    values = pd.to_numeric(column, errors="coerce").astype(float)
    return values.where(np.isfinite(values))


def metrics_frame(store: Store) -> pd.DataFrame:
    """Every metric row of a complete unit, the latest unit per (label, suite, task, length, metric). A value that is
    not a finite number (which no run stores, and ingest refuses; a hand-edited or foreign store may hold one) is left
    out, as a failed unit is: `Store.untrusted_metrics` names them for the commands to say so."""
    frame = store.metrics_frame()
    if frame.empty:
        return frame
    frame["value"], frame["stderr"], frame["n"] = numeric(frame.value), numeric(frame.stderr), numeric(frame.n)
    frame = frame[frame.value.notna()]
    frame = frame.sort_values(["finished", "unit_id"])
    return frame.groupby(["label", "suite", "task", "context_length", "metric"], as_index=False).last()


def label_families(store: Store) -> dict[str, str]:
    """label -> the model family of its latest run (catalog.family_name of the stored model config)."""
    from ccq_eval.catalog import family_name

    families = {}
    for run in store.runs():  # oldest first: the latest run of a label wins
        if isinstance(run.model_config, dict):  # an unreadable config names no family; the row still shows
            families[run.label] = family_name(run.model_config)
    return families


def latest_samples(store: Store, suite: str, columns: tuple[str, ...]) -> pd.DataFrame:
    """Per-sample rows (``columns`` of the samples table) with label, task, length and the unit's settings,
    for the latest complete unit of each (label, task, length) of one suite."""
    frame = store.samples_frame(suite, columns)
    if frame.empty:
        return frame
    latest = frame.sort_values(["finished", "unit_id"]).groupby(["label", "task", "context_length"]).unit_id.last()
    frame = frame[frame.unit_id.isin(set(latest))].copy()
    if "score" in frame:
        frame["score"] = numeric(frame.score)
    if "fields" in frame:
        frame["fields"] = frame.fields.map(sample_fields)
    return frame


def sample_fields(text) -> dict:
    """A sample's per-suite fields (JSON text in the store) as a dict: empty where they are not a JSON object."""
    try:
        fields = json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return {}
    return fields if isinstance(fields, dict) else {}
