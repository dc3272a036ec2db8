"""A table as a suite builds it (``Table``) and its rendering into every format (``render``):
reference rows, baseline deltas, intervals in the cells, bold best per column, escaping."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pandas as pd

from ccq_eval.report.formats import DELTA_ROW, REPORTED_ROW, Rendered, grid, mark_partial, number_cells, to_csv
from ccq_eval.report.paired_tests import p_text
from ccq_eval.report.reference import REPORTED, with_deltas, with_rows


@dataclass
class TableOptions:
    ci: bool = False
    reference: bool = False
    baseline: str | None = None
    strict: bool = True  # False (tables --table all): a baseline missing from this table is skipped


@dataclass
class Table:
    values: pd.DataFrame  # measured rows: label x column
    caption: str
    digits: int = 2
    higher_is_better: Callable[[str], bool] = lambda column: True
    reference: pd.DataFrame = field(default_factory=pd.DataFrame)  # reported rows (with options.reference)
    low: pd.DataFrame | None = None  # 95% bounds: cells "v [low, high]", CSV columns
    high: pd.DataFrame | None = None
    stderr: pd.DataFrame | None = None  # cells "v ± 1.96 se" (lm-eval's standard errors)
    paired: dict = field(default_factory=dict)  # (delta row, column) -> PairedResult (report/paired_tests.py)
    compare: str = "difference"  # what --baseline adds: "difference" rows, or "ratio" rows (costs)


def render(table: Table, options: TableOptions, families: dict[str, str] | None = None,
           partial: dict[str, str] | None = None) -> Rendered | None:
    """The table's grid and CSV (``.formats()``: every format), or None when there is nothing to show. Reference rows render
    even when the store has no measured rows for the table. ``families`` (label -> model family) adds a
    family column to every format; ``partial`` (label -> why) marks the rows of a job missing a shard."""
    measured = table.values
    values = with_rows(measured, table.reference) if options.reference else measured
    if values.empty:
        return None
    compared = ()
    baseline = options.baseline
    if baseline is not None and (options.strict or baseline in values.index):
        with_delta = with_deltas(values, baseline, ratio=table.compare == "ratio")
        compared = [label for label in with_delta.index if label not in values.index]
        values = with_delta
    digits = table.digits
    cells = number_cells(values, digits, compared if table.compare == "difference" else ())
    low, high = (table.low, table.high) if options.ci else (None, None)
    if low is not None:  # "value [low, high]"
        for label in measured.index:
            for column in measured.columns:
                if not pd.isna(measured.at[label, column]) and not pd.isna(low.at[label, column]):
                    cells.at[label, column] = (f"{measured.at[label, column]:.{digits}f} "
                                               f"[{low.at[label, column]:.{digits}f}, {high.at[label, column]:.{digits}f}]")
    if options.ci and table.stderr is not None:  # 95% normal intervals from standard errors
        stderr = table.stderr
        for label in measured.index:
            for column in measured.columns:
                value = measured.at[label, column]
                se = stderr.at[label, column] if column in stderr.columns else None
                if not pd.isna(value) and se is not None and not pd.isna(se):
                    cells.at[label, column] = f"{value:.{digits}f} ± {1.96 * se:.{digits}f}"
    for (label, column), result in (table.paired if options.ci else {}).items():
        if label in cells.index and column in cells.columns:
            cells.at[label, column] = (f"{result.delta:+.{digits}f} [{result.low:+.{digits}f}, {result.high:+.{digits}f}] "
                                       f"({p_text(result.p_value)})")
    kinds = {label: DELTA_ROW if label in compared else REPORTED_ROW for label in values.index
             if label in compared or str(label).endswith(REPORTED)}
    ranked = values.drop(index=list(kinds))  # the best of a column is the best measured value: no reported or delta row
    csv_low = csv_high = None
    if low is not None:
        csv_low, csv_high = (low.reindex(index=values.index, columns=values.columns),
                             high.reindex(index=values.index, columns=values.columns))
        if csv_low.isna().all().all():
            csv_low = csv_high = None  # no interval could be formed (e.g. one sequence per corpus)
    direction = {c: table.higher_is_better(c) for c in values.columns}
    partial = {label: why for label, why in (partial or {}).items() if label in values.index}
    return Rendered(mark_partial(grid(ranked, cells, table.caption, direction, families, kinds), partial),
                    to_csv(values, csv_low, csv_high, families, partial))
