"""The extrapolation curves: perplexity against context length, a panel per corpus."""

from __future__ import annotations

import math

from ccq_eval.report.figures import label_colours, plot_label, pyplot, training_lengths
from ccq_eval.report.frame import metrics_frame


def curves_figure(suite, store):
    """2 x 3 grid, one panel per corpus: perplexity against context length, one line per label."""
    plt = pyplot()
    frame = metrics_frame(store)
    if frame.empty:
        return None
    rows = frame[(frame.suite == "longppl") & (frame.metric == "perplexity")]
    if rows.empty:
        return None
    colours, trained = label_colours(store), training_lengths(store)
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
        for label in sorted(sub.label.unique()):
            line = sub[sub.label == label].sort_values("context_length")
            ax.plot(line.context_length / 1024, line.value, marker="o", ms=3, color=colours[label], label=plot_label(label))
            if label in trained:
                ax.axvline(trained[label] / 1024, color=colours[label], ls="--", lw=0.8)
        ax.set_title(suite.display[task])
        ax.set_xlabel("context length (K tokens)")
        ax.set_ylabel("perplexity (log scale)")
        if not sub.empty:
            ax.set_yscale("log")  # a collapse past the training length is orders of magnitude
        if sub.empty:
            ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="grey")
    handles, labels = [], []
    for ax in axes.flat:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            if label not in labels:
                handles.append(handle)
                labels.append(label)
    fig.legend(handles, labels, loc="outside lower center", ncol=min(4, len(labels)))
    return fig
