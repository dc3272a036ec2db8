"""BABILong's accuracy against context length: a panel per task (and QA1-QA5's mean where a model has all five), one
line per model (report/series.py: a CCQ model in its backbone's colour, seeds as a band); cells built on different
haystacks never share a panel."""

from __future__ import annotations

import math

import pandas as pd

from ccq_eval.report.entries import figure
from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.series import label_lines, legend_beside, plot_series, series_of
from ccq_eval.suites.sniah.columns import haystack_of

MEAN = "QA1-QA5 mean"


def panels(rows: pd.DataFrame, tasks: tuple[str, ...]) -> list[tuple[str, str, pd.DataFrame]]:
    """(title, haystack, rows) per task with data on each haystack, then the mean of the five where all are there."""
    out = []
    for haystack, on in rows.groupby("haystack", sort=True):
        for task in [t for t in tasks if t in set(on.task)]:
            out.append((task, haystack, on[on.task == task]))
        full = on.groupby(["label", "context_length"]).filter(lambda cell: set(cell.task) >= set(tasks))
        if not full.empty:
            mean = full.groupby(["label", "context_length"], as_index=False).value.mean()
            out.append((MEAN, haystack, mean))
    return out


@figure("babilong")
def accuracy_figure(results):
    from ccq_eval.suites.babilong import SUITE as suite

    frame = results.metrics
    rows = frame[(frame.suite == suite.name) & (frame.metric == "score")] if not frame.empty else frame
    rows = rows[rows.context_length > 0].copy() if not rows.empty else rows  # 0K has no haystack: the table shows it
    if rows.empty:
        return None
    rows["haystack"] = rows.settings.map(haystack_of)
    shown = panels(rows, suite.tasks)
    all_series = series_of(rows.label.unique())
    ticks = sorted({length / 1024 for length in rows.context_length})
    plt = pyplot()
    columns = min(3, len(shown))
    fig, axes = plt.subplots(math.ceil(len(shown) / columns), columns, squeeze=False, constrained_layout=True,
                             figsize=(4 * columns, 3.25 * math.ceil(len(shown) / columns) + 0.5))
    for ax in axes.flat[len(shown):]:
        ax.set_visible(False)
    for ax, (task, haystack, sub) in zip(axes.flat, shown):
        lines = label_lines(sub)
        for series in all_series:
            plot_series(ax, series, lines, plot_label(series.display))
        ax.set_title(f"{suite.display_name(task) if task != MEAN else MEAN} ({haystack})")
        ax.set_xscale("log", base=2)
        ax.set_xticks(ticks, [f"{tick:g}" for tick in ticks])  # the lengths run, as numbers (not powers of two)
        ax.minorticks_off()
        ax.set_xlabel("context length (K tokens)")
        ax.set_ylabel("accuracy (%)")
        ax.set_ylim(-3, 103)
    legend_beside(fig, axes.flat, all_series)
    return fig
