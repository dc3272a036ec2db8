"""LongBench's table: the 14 tasks (x budgets when several) and their mean, beside the reported rows."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length


def cells(suite, frame: pd.DataFrame, field: str = "value") -> pd.DataFrame:
    """Rows = labels, columns = the 14 tasks (x budgets when several) + the mean of the 14 cells."""
    rows = frame[(frame.suite == "longbench") & (frame.metric == "score")].copy() if not frame.empty else frame
    if rows.empty:
        return pd.DataFrame()
    lengths = sorted(rows.context_length.unique())
    parts = []
    for length in lengths:
        at = rows[rows.context_length == length]
        suffix = f" {format_length(length)}" if len(lengths) > 1 else ""
        names = [suite.display_name(t) + suffix for t in suite.tasks]
        table = at.assign(column=[suite.display_name(t) + suffix for t in at.task]).pivot(
            index="label", columns="column", values=field).reindex(columns=names)
        # the mean of the 14 cells; missing while any task is missing
        table[f"Avg{suffix}"] = table[names].mean(axis=1, skipna=False) if field == "value" else float("nan")
        parts.append(table)
    return pd.concat(parts, axis=1)


def reported(suite) -> pd.DataFrame:
    """The reported rows, with the plain mean of the 14 cells beside the paper's own average."""
    ref = reference_rows("longbench")
    if not ref.empty:
        ref.insert(14, "Avg", ref[[suite.display_name(t) for t in suite.tasks]].mean(axis=1))
    return ref


@table("longbench")
def score_table(results, options) -> Table:
    from ccq_eval.suites.longbench import SUITE as suite

    frame = results.metrics
    values = cells(suite, frame)
    return Table(values=values, digits=1, caption="LongBench scores; Avg is the mean of the 14 cells",
                 stderr=None if values.empty else cells(suite, frame, "stderr"),
                 reference=reported(suite) if options.reference else pd.DataFrame())
