"""The efficiency figure: prefill and decoding throughput and the cache against context length, log scales."""

from __future__ import annotations

from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.frame import metrics_frame
from ccq_eval.report.series import label_lines, legend_beside, plot_series, series_of
from ccq_eval.suites.efficiency.tables import COLUMNS


def cost_figure(suite, store):
    """Prefill tok/s, decode tok/s and cache MiB against context length, one line per model (report/series.py)."""
    plt = pyplot()
    frame = metrics_frame(store)
    if frame.empty or frame[frame.suite == "efficiency"].empty:
        return None
    rows = frame[frame.suite == "efficiency"]
    all_series = series_of(rows.label.unique())
    shown = ("prefill_tokens_per_s", "decode_tokens_per_s", "cache_bytes")
    fig, axes = plt.subplots(1, len(shown), figsize=(4 * len(shown), 3.5), constrained_layout=True)
    for ax, metric in zip(axes, shown):
        heading, scale, _ = COLUMNS[metric]
        sub = rows[rows.metric == metric]
        lines = label_lines(sub, scale)
        for series in all_series:
            plot_series(ax, series, lines, plot_label(series.display))
        ax.set_title(heading)
        ax.set_xlabel("context length (K tokens)")
        ax.set_xscale("log", base=2)
        if not sub.empty and (sub.value > 0).all():
            ax.set_yscale("log")
    legend_beside(fig, axes, all_series)
    return fig


def recall_state_figure(suite, store):
    """Each retrieval suite's mean accuracy against state MiB (log scale), a panel per suite, a point per model
    and length (labelled with the length; a model's seeds averaged), each CCQ model joined to its backbone at the
    same length by a thin line."""
    from ccq_eval.suites.efficiency.recall_state import mean_columns, reported_points, state_points

    points = state_points(store, metrics_frame(store))
    if points.empty or points.state_bytes.isna().all():
        return None
    panels = [c for c in mean_columns(points) if points.dropna(subset=["state_bytes", c]).shape[0]]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels) + 1.9, 4.2), constrained_layout=True,
                             squeeze=False, sharey=True)
    reported = reported_points()
    for ax, column in zip(axes[0], panels):
        _recall_panel(ax, points.dropna(subset=["state_bytes", column]), column)
        if column in reported.columns:  # the reported rows, at their published configuration's state
            _reported_panel(ax, reported.dropna(subset=["state_bytes", column]), column)
    axes[0][0].set_ylabel("retrieval accuracy (%, mean of tasks)")
    handles = {label: handle for ax in axes[0] for handle, label in zip(*ax.get_legend_handles_labels())}
    # the legend beside the panels takes the width of its longest entry (up to 0.1 in a character at size 8)
    fig.set_figwidth(4.6 * len(panels) + max(1.9, 0.6 + 0.1 * max(map(len, handles), default=0)))
    fig.legend(handles.values(), handles.keys(), loc="outside right upper", fontsize=8, frameon=False,
               title="open: backbone · filled: CCQ\ngrey line: CCQ to its backbone", title_fontsize=7)
    return fig


def _reported_panel(ax, reported, column: str) -> None:
    from ccq_eval.report.reference import REPORTED
    from ccq_eval.suites.base import format_length
    from ccq_eval.suites.efficiency.recall_state import MIB

    for label, rows in reported.groupby("label", sort=False):
        ax.scatter(rows.state_bytes / MIB, rows[column], color="black", marker="x", s=28, zorder=2,
                   label=plot_label(label + REPORTED))
        for _, row in rows.iterrows():
            ax.annotate(format_length(int(row.length)), (row.state_bytes / MIB, row[column]), fontsize=6,
                        xytext=(3, 3), textcoords="offset points", color="dimgrey")


def _recall_panel(ax, points, column: str) -> None:
    from ccq_eval.report.series import BACKBONE, TRAINED_CCQ, TRAINING_FREE_CCQ
    from ccq_eval.suites.base import format_length
    from ccq_eval.suites.efficiency.recall_state import MIB

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
