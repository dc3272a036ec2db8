"""Reported rows (results/reference/<table>.csv, shipped as ccq_eval.reference) and delta rows."""

from __future__ import annotations

import pandas as pd

REPORTED = " (reported)"


def reported_cells(table: str) -> pd.DataFrame:
    """The reported numbers of a table as shipped (source, model, column, value), with each row's label
    ("model [source]") beside them; empty where the table has none."""
    from ccq_eval.mapped_folders import mapped_folder

    path = mapped_folder("ccq_eval.reference") / f"{table}.csv"
    if not path.is_file():
        return pd.DataFrame()
    ref = pd.read_csv(path)
    ref["label"] = ref.model + " [" + ref.source.str.split(",").str[0] + "]"
    return ref


def reference_rows(table: str) -> pd.DataFrame:
    """The reported numbers for a table, one row per source and model, labelled '(reported)'."""
    ref = reported_cells(table)
    if ref.empty:
        return ref
    ref["label"] = ref.label + REPORTED
    return ref.pivot_table(index="label", columns="column", values="value", sort=False)


def with_rows(values: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    """Measured rows, then reference rows, on the union of their columns (measured columns first)."""
    if ref.empty:
        return values
    columns = list(values.columns) + [c for c in ref.columns if c not in values.columns]
    return pd.concat([values.reindex(columns=columns), ref.reindex(columns=columns)])


def with_deltas(values: pd.DataFrame, baseline: str, ratio: bool = False) -> pd.DataFrame:
    """Adds a 'label − baseline' row per measured label, as the paper's text quotes its deltas; with ``ratio``,
    a 'label / baseline' row instead (costs: CCQ's throughput and memory as a multiple of its backbone's)."""
    if baseline not in values.index:
        raise ValueError(f"--baseline {baseline!r}: no such label in the table; labels: {', '.join(values.index)}")
    deltas = {}
    for label in values.index:
        if label == baseline or label.endswith(REPORTED):
            continue
        if ratio:
            deltas[f"{label} / {baseline}"] = values.loc[label] / values.loc[baseline].where(values.loc[baseline] != 0)
        else:
            deltas[f"{label} − {baseline}"] = values.loc[label] - values.loc[baseline]
    frame = pd.DataFrame(deltas).T.reindex(columns=values.columns)
    return pd.concat([values, frame]) if not frame.empty else values
