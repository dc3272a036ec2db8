"""The extrapolation curves: perplexity against context length, a panel per corpus."""

from __future__ import annotations

import math

from ccq_eval.report.entries import figure
from ccq_eval.report.figures import plot_label, pyplot
from ccq_eval.report.series import label_lines, legend_beside, plot_series, series_of


@figure("longppl")
def curves_figure(results):
    """2 x 3 grid, one panel per corpus: perplexity against context length, one line per model (report/series.py:
    a CCQ model in its backbone's colour, seeds as a band), each training length a grey dotted line."""
    from ccq_eval.suites.longppl import SUITE as suite

    frame = results.metrics
    if frame.empty:
        return None
    rows = frame[(frame.suite == "longppl") & (frame.metric == "perplexity")]
    if rows.empty:
        return None
    trained, all_series = results.training_lengths(), series_of(rows.label.unique())
    plt = pyplot()
    # the paper's six panels; the shipped corpora get panels only when they have data
    tasks = list(suite.tasks) if set(rows.task) & set(suite.tasks) else []
    tasks += [t for t in suite.extra_tasks if t in set(rows.task)]
    columns = min(3, len(tasks))
    fig, axes = plt.subplots(math.ceil(len(tasks) / columns), columns,
                             figsize=(4 * columns, 3.25 * math.ceil(len(tasks) / columns) + 0.5),
                             constrained_layout=True, squeeze=False)
    for ax in axes.flat[len(tasks):]:
        ax.set_visible(False)
    for ax, task in zip(axes.flat, tasks):
        sub = rows[rows.task == task]
        lines = label_lines(sub)
        for series in all_series:
            plot_series(ax, series, lines, plot_label(series.display))
        for length in sorted({trained[label] for label in lines if label in trained}):
            ax.axvline(length / 1024, color="grey", ls=":", lw=0.8)
        ax.set_title(suite.display_name(task))
        ax.set_xlabel("context length (K tokens)")
        ax.set_ylabel("perplexity (log scale)")
        if not sub.empty:
            ax.set_yscale("log")  # a collapse past the training length is orders of magnitude
        if sub.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    legend_beside(fig, axes.flat, all_series)
    return fig
