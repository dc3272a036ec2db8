"""S-NIAH's needle-depth heatmap."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ccq_eval.report.entries import figure
from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.series import BACKBONE, TRAINED_CCQ, series_of
from ccq_eval.suites.base import format_length


def depth_frame(results) -> pd.DataFrame:
    """Per-sample scores with needle depth, for each cell's unit."""
    frame = results.samples("sniah", ("score", "fields")).copy()
    if not frame.empty:  # where the needle was (samples stored before depth_used: as drawn; lm-eval's: not recorded)
        frame["depth"] = pd.to_numeric(frame.fields.map(lambda f: f.get("depth_used", f.get("depth"))), errors="coerce")
        frame = frame[frame.depth.notna() & frame.score.notna()]
    return frame


MAX_PANEL_COLUMNS = 5  # panels wrap into rows: 15 models x 2 tasks in one row was 10,230 px wide


PANEL_INCHES = (3.0, 2.5)  # at the 150 dpi figures are saved with: 5 columns + colour bar <= 2,500 px


def panel_grid(count: int) -> tuple[int, int]:
    """(rows, columns) for count panels, at most MAX_PANEL_COLUMNS wide."""
    columns = max(1, min(MAX_PANEL_COLUMNS, count))
    return math.ceil(count / columns), columns


@figure("sniah-depth")
def depth_figure(results):
    """The needle heatmap: depth (10% bins) x context length, one panel per (task, model), wrapped into
    rows of at most five panels, task by task; a CCQ model's panel beside its backbone's, a model's seeds
    pooled into one panel (report/series.py)."""
    from ccq_eval.suites.sniah import SUITE as suite

    frame = depth_frame(results)
    if frame.empty:
        return None
    plt = pyplot()
    frame["bin"] = np.minimum((frame.depth // 10).astype(int), 9)
    tasks = [t for t in suite.tasks if t in set(frame.task)]
    lengths = sorted(frame.context_length.unique())
    present = set(zip(frame.task, frame.label))
    panels = [(task, series) for task in tasks for series in series_of(frame.label.unique())
              if any((task, label) in present for label in series.labels)]  # no empty panels
    if not panels:  # samples only of tasks this version does not show
        return None
    rows, columns = panel_grid(len(panels))
    width = min(PANEL_INCHES[0], 1.2 + 0.45 * len(lengths))
    fig, axes = plt.subplots(rows, columns, figsize=(width * columns + 0.9, PANEL_INCHES[1] * rows),
                             squeeze=False, constrained_layout=True)
    image = None
    for index, (task, series) in enumerate(panels):
        ax = axes[index // columns, index % columns]
        sub = frame[(frame.task == task) & frame.label.isin(series.labels)]
        grid = sub.pivot_table(index="bin", columns="context_length", values="score", aggfunc="mean")
        grid = grid.reindex(index=range(10), columns=lengths)
        image = ax.imshow(grid.values, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto", origin="upper")
        ax.set_xticks(range(len(lengths)), [format_length(L) for L in lengths], fontsize=7)
        ax.set_yticks(range(10), [f"{10 * b}%" for b in range(10)] if index % columns == 0 else [], fontsize=7)
        ax.set_title(f"{plot_label(series.display)} · {suite.display_name(task)}", fontsize=8,
                     color=series.colour if series.role in (BACKBONE, TRAINED_CCQ) else "black")
        if index % columns == 0:
            ax.set_ylabel("needle depth", fontsize=8)
        if index + columns >= len(panels):  # the lowest panel of its column
            ax.set_xlabel("context length", fontsize=8)
    for index in range(len(panels), rows * columns):
        axes[index // columns, index % columns].set_visible(False)
    fig.colorbar(image, ax=axes, shrink=0.6, label="accuracy (%)")
    return fig
