"""The RULER table: every RULER task a store holds (S-NIAH's three single-needle tasks, the five multi-needle ones,
VT, CWE and FWE) per length, and RULER's average of them where a model has every task the table shows at that
length."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length
from ccq_eval.suites.sniah.columns import column_name, haystack_of

RULER_SUITES = ("sniah", "multi_niah", "ruler")  # in RULER's order: single needles, multi-needle, the rest


def ruler_cells(frame: pd.DataFrame) -> pd.DataFrame:
    """label x column: each task's score at each length, then that length's average."""
    from ccq_eval.suites import SUITES

    rows = frame[frame.suite.isin(RULER_SUITES) & (frame.metric == "score")].copy() if not frame.empty else frame
    if rows.empty:
        return pd.DataFrame()
    rows["column"] = [column_name(SUITES[s], t, haystack_of(settings), L)
                      for s, t, settings, L in zip(rows.suite, rows.task, rows.settings, rows.context_length)]
    rows["order"] = [(L, RULER_SUITES.index(s), SUITES[s].task_order(t))
                     for s, t, L in zip(rows.suite, rows.task, rows.context_length)]
    values = rows.pivot(index="label", columns="column", values="value")
    parts = []
    for length in sorted(set(rows.context_length)):
        at = rows[rows.context_length == length]
        columns = [c for _, c in sorted(set(zip(at.order, at.column)))]
        parts.append(values[columns])
        # the average only over a full row: a model missing a task the others ran has none
        parts.append(values[columns].mean(axis=1).where(values[columns].notna().all(axis=1))
                     .rename(f"avg {format_length(length)}"))
    return pd.concat(parts, axis=1)


@table("ruler")
def ruler_table(results, options) -> Table:
    return Table(values=ruler_cells(results.metrics), digits=1,
                 caption=r"RULER (\%): each task, and their average per length over the tasks shown")
