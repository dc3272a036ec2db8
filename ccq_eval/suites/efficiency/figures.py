"""The efficiency figure: prefill and decoding throughput and the cache against context length, log scales."""

from __future__ import annotations

from ccq_eval.report.entries import figure
from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.series import label_lines, legend_beside, plot_series, series_of
from ccq_eval.suites.efficiency.tables import COLUMNS


@figure("efficiency")
def cost_figure(results):
    """Prefill tok/s, decode tok/s and cache MiB against context length, one line per model (report/series.py)."""
    frame = results.metrics
    if frame.empty or frame[frame.suite == "efficiency"].empty:
        return None
    plt = pyplot()
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

