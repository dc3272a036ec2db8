"""The store as tidy DataFrames. Where a label has several complete units for one cell (reruns,
other runs), the latest one counts; failed units never reach a table (they show as missing cells)."""

from __future__ import annotations

import pandas as pd

from ccq_eval.store import Store


def metrics_frame(store: Store) -> pd.DataFrame:
    """Every metric row of a complete unit, the latest unit per (label, suite, task, length, metric)."""
    frame = store.frame(
        "SELECT m.label, m.model, m.suite, m.task, m.context_length, m.metric, m.value, m.stderr, m.n, "
        "m.higher_is_better, m.is_primary, u.id AS unit_id, u.finished, u.settings "
        "FROM metrics m JOIN units u ON u.id = m.unit_id WHERE u.status = 'complete'")
    if frame.empty:
        return frame
    frame = frame.sort_values(["finished", "unit_id"])
    return frame.groupby(["label", "suite", "task", "context_length", "metric"], as_index=False).last()


def label_families(store: Store) -> dict[str, str]:
    """label -> the model family of its latest run (catalog.family_name of the stored model config)."""
    import json

    from ccq_eval.catalog import family_name

    families = {}
    runs = store.frame("SELECT label, model_config FROM runs ORDER BY started, id")
    for label, config in zip(runs.label, runs.model_config):
        try:
            families[label] = family_name(json.loads(config))
        except (json.JSONDecodeError, TypeError):
            continue  # an unreadable config names no family; the row still shows
    return families


def latest_samples(store: Store, suite: str, columns: str) -> pd.DataFrame:
    """Per-sample rows (``columns`` of samples s) with label, task, length and the unit's settings, for
    the latest complete unit of each (label, task, length) of one suite."""
    frame = store.frame(
        f"SELECT r.label, u.task, u.context_length, u.settings, u.finished, u.id AS unit_id, {columns} "
        "FROM samples s JOIN units u ON u.id = s.unit_id JOIN runs r ON r.id = u.run_id "
        "WHERE u.status = 'complete' AND u.suite = ?", (suite,))
    if frame.empty:
        return frame
    latest = frame.sort_values(["finished", "unit_id"]).groupby(["label", "task", "context_length"]).unit_id.last()
    return frame[frame.unit_id.isin(set(latest))].copy()
