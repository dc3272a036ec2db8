"""The recall-state figure: each retrieval suite's mean accuracy against the state a model holds (recall_state.py
computes the points)."""

from __future__ import annotations

from ccq_eval.catalogue.recall_state import MIB, mean_columns, reported_points, state_points
from ccq_eval.report.entries import figure
from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.reference import REPORTED
from ccq_eval.report.series import BACKBONE, TRAINED_CCQ, TRAINING_FREE_CCQ, series_of
from ccq_eval.suites.base import format_length


@figure("recall-state", about="retrieval accuracy against state MiB")
def recall_state_figure(results):
    """Each retrieval suite's mean accuracy against state MiB (log scale, one x axis for every panel), a panel per
    suite (two a row), a point per model
    and length (labelled with the length; a model's seeds averaged), each CCQ model joined to its backbone at the
    same length by a thin line."""
    points = state_points(results)
    if points.empty or points.state_bytes.isna().all():
        return None
    panels = [c for c in mean_columns(points) if points.dropna(subset=["state_bytes", c]).shape[0]]
    if not panels:
        return None
    plt = pyplot()
    columns = min(2, len(panels))  # two panels a row: four side by side would be too small to read in a page
    rows = -(-len(panels) // columns)
    fig, grid = plt.subplots(rows, columns, figsize=(4.6 * columns + 1.9, 4.2 * rows), constrained_layout=True,
                             squeeze=False, sharex=True, sharey=True)
    axes = list(grid.flat)
    for spare in axes[len(panels):]:
        fig.delaxes(spare)
    reported = reported_points()
    for ax, column in zip(axes, panels):
        _recall_panel(ax, points.dropna(subset=["state_bytes", column]), column)
        if column in reported.columns:  # the reported rows, at their published configuration's state
            _reported_panel(ax, reported.dropna(subset=["state_bytes", column]), column)
        ax.xaxis.set_tick_params(labelbottom=True)  # every panel keeps its scale readable
    for row in grid:
        row[0].set_ylabel("retrieval accuracy (%, mean of tasks)")
    handles = {label: handle for ax in axes[:len(panels)] for handle, label in zip(*ax.get_legend_handles_labels())}
    # the legend beside the panels takes the width of its longest entry (up to 0.1 in a character at size 8)
    fig.set_figwidth(4.6 * columns + max(1.9, 0.6 + 0.1 * max(map(len, handles), default=0)))
    fig.legend(handles.values(), handles.keys(), loc="outside right upper", fontsize=8, frameon=False,
               title="open: backbone · filled: CCQ\ngrey line: CCQ to its backbone", title_fontsize=7)
    return fig


def _reported_panel(ax, reported, column: str) -> None:
    for label, rows in reported.groupby("label", sort=False):
        ax.scatter(rows.state_bytes / MIB, rows[column], color="black", marker="x", s=28, zorder=2,
                   label=plot_label(label + REPORTED))
        for _, row in rows.iterrows():
            ax.annotate(format_length(int(row.length)), (row.state_bytes / MIB, row[column]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points", color="dimgrey")


def _recall_panel(ax, points, column: str) -> None:
    all_series = series_of(points.label.unique())
    means = {series.name: points[points.label.isin(series.labels)].groupby("length")[["state_bytes", column]].mean()
             for series in all_series}  # a model's seeds: one point per length, their mean
    backbones = {series.group: series.name for series in all_series if series.role == BACKBONE}
    for series in all_series:
        base = means.get(backbones.get(series.group)) if series.role in (TRAINED_CCQ, TRAINING_FREE_CCQ) else None
        for length in [] if base is None else means[series.name].index.intersection(base.index):
            ours, theirs = means[series.name].loc[length], base.loc[length]
            ax.plot([theirs.state_bytes / MIB, ours.state_bytes / MIB], [theirs[column], ours[column]], color="grey",
                    lw=0.7, zorder=1)
    for series in all_series:
        mine = means[series.name]
        ax.scatter(mine.state_bytes / MIB, mine[column], color=series.colour, marker=series.marker, s=28, zorder=2,
                   label=plot_label(series.display), facecolors="none" if series.role == BACKBONE else series.colour)
        for length, row in mine.iterrows():
            ax.annotate(format_length(int(length)), (row.state_bytes / MIB, row[column]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points", color="dimgrey")
    ax.set_xscale("log")
    ax.set_xlabel("state held at that length (MiB, log scale)")
    ax.set_title(column, fontsize=9)
    ax.set_ylim(-3, 103)
