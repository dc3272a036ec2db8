"""S-NIAH's tables (accuracy with Wilson intervals and paired deltas; partial retrieval), over the shared
formatting in report/; the needle-depth heatmap is figures.py."""

from __future__ import annotations

import math

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.intervals import wilson_interval
from ccq_eval.report.paired_tests import delta_row_tests
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.sniah.columns import column_name, haystack_of
from ccq_eval.suites.sniah.paired import paired_cells


def cells(suite, frame: pd.DataFrame, metric: str = "score",
          bounds: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(values, ci_low, ci_high): rows = labels, columns = S1/S2/S3 x lengths in the paper's order.
    The Wilson bounds (with ``bounds``) apply to the score (a proportion) only; NaN otherwise."""
    rows = frame[(frame.suite == suite.name) & (frame.metric == metric)].copy() if not frame.empty else frame
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["haystack"] = rows.settings.map(haystack_of)
    rows["column"] = [column_name(suite, t, h, L) for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    rows["order"] = [(suite.task_order(t), h if isinstance(h, str) else "", L)
                     for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    intervals = ([wilson_interval(v / 100 * n, n) for v, n in zip(rows.value, rows.n)]
                 if metric == "score" and bounds else [(math.nan, math.nan)] * len(rows))
    rows["low"], rows["high"] = [b[0] for b in intervals], [b[1] for b in intervals]

    def pivot(field):
        return rows.pivot(index="label", columns="column", values=field).reindex(columns=columns)

    return pivot("value"), pivot("low"), pivot("high")


@table("sniah")
def sniah_table(results, options) -> Table:
    from ccq_eval.suites.sniah import SUITE

    return accuracy_table(SUITE, results, options, "S-NIAH")


def accuracy_table(suite, results, options, title: str) -> Table:
    """``title``: the suite's name in the caption (the multi-needle suite's table is this one)."""
    values, low, high = cells(suite, results.metrics, bounds=options.ci)
    paired = (delta_row_tests(paired_cells(suite, results), options.baseline, " acc")
              if options.baseline and options.ci else {})
    return Table(values=values, low=None if values.empty else low, high=None if values.empty else high,
                 caption=title + r" accuracy (\%)" + (r" with 95\% Wilson intervals" if options.ci else ""),
                 digits=1, reference=reference_rows(suite.name) if options.reference else pd.DataFrame(), paired=paired)


def partial_cells(suite, frame: pd.DataFrame) -> pd.DataFrame:
    """For each cell, the share of the answer reproduced from its start (%, higher is better) and the
    answer's teacher-forced NLL per token (lower is better)."""
    prefix, nll = cells(suite, frame, "answer_prefix")[0], cells(suite, frame, "answer_nll")[0]
    if prefix.empty:
        return pd.DataFrame()
    parts = {}
    for column in prefix.columns:
        parts[f"{column} prefix %"] = prefix[column] * 100
        if column in nll.columns:
            parts[f"{column} NLL"] = nll[column]
    return pd.DataFrame(parts)


@table("sniah-partial")
def partial_table(results, options) -> Table:
    from ccq_eval.suites.sniah import SUITE

    return Table(values=partial_cells(SUITE, results.metrics), digits=2, higher_is_better=lambda c: not c.endswith(" NLL"),
                 caption="S-NIAH partial retrieval: answer reproduced from its start (\\%) and the answer's "
                         "teacher-forced NLL per token",
                 reference=reference_rows("sniah-partial") if options.reference else pd.DataFrame())


