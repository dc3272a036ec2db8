"""S-NIAH's tables (accuracy with Wilson intervals and paired deltas; partial retrieval) and the
needle-depth heatmap, over the shared formatting in report/."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd

from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.frame import latest_samples
from ccq_eval.report.intervals import wilson_interval
from ccq_eval.report.paired_tests import ScoreCell, delta_row_tests
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length


def haystack_of(settings: str) -> str | None:
    haystack = json.loads(settings).get("haystack")
    return haystack["name"] if haystack else None


def column_name(suite, task: str, haystack, length: int) -> str:
    """S-NIAH-2/3 columns carry their haystack's name: numbers on another haystack are not the paper's."""
    return f"{suite.display[task]}{f' ({haystack})' if isinstance(haystack, str) else ''} {format_length(length)}"


def cells(suite, frame: pd.DataFrame, metric: str = "score",
          bounds: bool = False) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(values, ci_low, ci_high): rows = labels, columns = S1/S2/S3 x lengths in the paper's order.
    The Wilson bounds (with ``bounds``) apply to the score (a proportion) only; NaN otherwise."""
    rows = frame[(frame.suite == "sniah") & (frame.metric == metric)].copy() if not frame.empty else frame
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["haystack"] = rows.settings.map(haystack_of)
    rows["column"] = [column_name(suite, t, h, L) for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    rows["order"] = [(suite.tasks.index(t), h if isinstance(h, str) else "", L)
                     for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    intervals = ([wilson_interval(v / 100 * n, int(n)) for v, n in zip(rows.value, rows.n)]
                 if metric == "score" and bounds else [(math.nan, math.nan)] * len(rows))
    rows["low"], rows["high"] = [b[0] for b in intervals], [b[1] for b in intervals]

    def pivot(field):
        return rows.pivot(index="label", columns="column", values=field).reindex(columns=columns)

    return pivot("value"), pivot("low"), pivot("high")


def paired_cells(suite, store) -> dict:
    """'S1 1K acc' -> ScoreCell: every label's per-prompt scores in that cell (the pairs table)."""
    frame = latest_samples(store, "sniah", "s.prompt_sha256, s.score")
    if frame.empty:
        return {}
    haystacks = frame.settings.map(haystack_of)
    frame["column"] = [column_name(suite, t, h, L) + " acc" for t, h, L in zip(frame.task, haystacks, frame.context_length)]
    frame["order"] = [(suite.tasks.index(t), h if isinstance(h, str) else "", L)  # the accuracy table's order
                      for t, h, L in zip(frame.task, haystacks, frame.context_length)]
    cells = {column: ScoreCell(cell.pivot_table(index="prompt_sha256", columns="label", values="score", aggfunc="first"))
             for column, cell in frame.groupby("column", sort=False)}
    order = dict(zip(frame.column, frame.order))
    return {column: cells[column] for column in sorted(cells, key=order.get)}


def accuracy_table(suite, frame: pd.DataFrame, store, options) -> Table:
    values, low, high = cells(suite, frame, bounds=options.ci)
    paired = (delta_row_tests(paired_cells(suite, store), options.baseline, " acc")
              if options.baseline and options.ci else {})
    return Table(values=values, low=None if values.empty else low, high=None if values.empty else high,
                 caption=r"S-NIAH accuracy (\%)" + (r" with 95\% Wilson intervals" if options.ci else ""),
                 digits=1, reference=reference_rows("sniah") if options.reference else pd.DataFrame(), paired=paired)


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


def partial_table(suite, frame: pd.DataFrame, store, options) -> Table:
    return Table(values=partial_cells(suite, frame), digits=2, higher_is_better=lambda c: not c.endswith(" NLL"),
                 caption="S-NIAH partial retrieval: answer reproduced from its start (\\%) and the answer's "
                         "teacher-forced NLL per token",
                 reference=reference_rows("sniah-partial") if options.reference else pd.DataFrame())


def depth_frame(store) -> pd.DataFrame:
    """Per-sample scores with needle depth, for the latest complete unit of each (label, task, length)."""
    frame = latest_samples(store, "sniah", "s.score, s.fields")
    if not frame.empty:
        frame["depth"] = frame.fields.map(lambda f: json.loads(f)["depth"])
    return frame


MAX_PANEL_COLUMNS = 5  # panels wrap into rows: 15 models x 2 tasks in one row was 10,230 px wide
PANEL_INCHES = (3.0, 2.5)  # at the 150 dpi figures are saved with: 5 columns + colour bar <= 2,500 px


def panel_grid(count: int) -> tuple[int, int]:
    """(rows, columns) for count panels, at most MAX_PANEL_COLUMNS wide."""
    columns = max(1, min(MAX_PANEL_COLUMNS, count))
    return math.ceil(count / columns), columns


def depth_figure(suite, store):
    """The needle heatmap: depth (10% bins) x context length, one panel per (task, label), wrapped into
    rows of at most five panels, task by task."""
    plt = pyplot()
    frame = depth_frame(store)
    if frame.empty:
        return None
    frame["bin"] = np.minimum((frame.depth // 10).astype(int), 9)
    labels, tasks = sorted(frame.label.unique()), [t for t in suite.tasks if t in set(frame.task)]
    lengths = sorted(frame.context_length.unique())
    present = set(zip(frame.task, frame.label))
    panels = [(task, label) for task in tasks for label in labels if (task, label) in present]  # no empty panels
    rows, columns = panel_grid(len(panels))
    width = min(PANEL_INCHES[0], 1.2 + 0.45 * len(lengths))
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns + 0.9, PANEL_INCHES[1] * rows),
                             squeeze=False, constrained_layout=True)
    image = None
    for index, (task, label) in enumerate(panels):
        ax = axes[index // columns, index % columns]
        sub = frame[(frame.task == task) & (frame.label == label)]
        grid = sub.pivot_table(index="bin", columns="context_length", values="score", aggfunc="mean")
        grid = grid.reindex(index=range(10), columns=lengths)
        image = ax.imshow(grid.values, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto", origin="upper")
        ax.set_xticks(range(len(lengths)), [format_length(L) for L in lengths], fontsize=7)
        ax.set_yticks(range(10), [f"{10 * b}%" for b in range(10)] if index % columns == 0 else [], fontsize=7)
        ax.set_title(f"{plot_label(label)} · {suite.display[task]}", fontsize=8)
        if index % columns == 0:
            ax.set_ylabel("needle depth", fontsize=8)
        if index + columns >= len(panels):  # the lowest panel of its column
            ax.set_xlabel("context length", fontsize=8)
    for index in range(len(panels), rows * columns):
        axes[index // columns, index % columns].set_visible(False)
    fig.colorbar(image, ax=axes, shrink=0.6, label="accuracy (%)")
    return fig
