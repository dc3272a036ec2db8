"""Long-context perplexity's table (with t intervals over sequences); the curves are figures.py."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.paired_tests import delta_row_tests
from ccq_eval.report.intervals import exp_t_interval
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length
from ccq_eval.suites.longppl.paired import paired_cells

MAX_LENGTH_COLUMNS = 5  # per corpus in the table; the curves show every length


def cells(suite, frame: pd.DataFrame, metric: str = "perplexity") -> pd.DataFrame:
    """Rows = labels, columns = corpus x lengths (at most 5 evenly spaced per corpus, ends included).
    metric "ci_low" / "ci_high": the 95% interval bounds in the same layout."""
    if frame.empty:
        return pd.DataFrame()
    if metric in ("ci_low", "ci_high"):
        rows = frame[(frame.suite == "longppl") & (frame.metric == "nll_per_token")].copy()
        bounds = [exp_t_interval(v, se, n) for v, se, n in zip(rows.value, rows.stderr, rows.n)]
        rows["value"] = [b[0 if metric == "ci_low" else 1] for b in bounds]
        rows["metric"] = "perplexity"
        layout = cells(suite, frame)
        return cells(suite, rows).reindex(index=layout.index, columns=layout.columns)
    rows = frame[(frame.suite == "longppl") & (frame.metric == metric)].copy()
    if rows.empty:
        return pd.DataFrame()
    columns = []
    for task in suite.all_tasks:
        lengths = sorted(rows[rows.task == task].context_length.unique())
        if len(lengths) > MAX_LENGTH_COLUMNS:
            picks = {round(i * (len(lengths) - 1) / (MAX_LENGTH_COLUMNS - 1)) for i in range(MAX_LENGTH_COLUMNS)}
            lengths = [lengths[i] for i in sorted(picks)]
        columns += [(task, L) for L in lengths]
    rows["column"] = [f"{suite.display_name(t)} {format_length(L)}" for t, L in zip(rows.task, rows.context_length)]
    names = [f"{suite.display_name(t)} {format_length(L)}" for t, L in columns]
    return rows.pivot(index="label", columns="column", values="value").reindex(columns=names)


@table("longppl")
def perplexity_table(results, options) -> Table:
    from ccq_eval.suites.longppl import SUITE as suite

    frame = results.metrics
    values = cells(suite, frame)
    low = high = None
    if options.ci and not values.empty:
        low, high = cells(suite, frame, "ci_low"), cells(suite, frame, "ci_high")
    paired = {}
    if options.ci and options.baseline and not values.empty:  # the delta rows' paired bootstrap per cell
        paired = delta_row_tests(paired_cells(suite, results), options.baseline, " ppl")
    return Table(values=values, low=low, high=high, digits=2, higher_is_better=lambda column: False, paired=paired,
                 caption="Perplexity by context length (lower is better)"
                         + (r" with 95\% intervals over sequences" if options.ci else ""),
                 reference=reference_rows("longppl") if options.reference else pd.DataFrame())


