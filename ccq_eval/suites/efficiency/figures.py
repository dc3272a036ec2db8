"""The efficiency figure: prefill and decoding throughput and the cache against context length, log scales."""

from __future__ import annotations

from ccq_eval.report.figures import label_colours, plot_label, pyplot
from ccq_eval.report.frame import metrics_frame
from ccq_eval.suites.efficiency.tables import COLUMNS


def cost_figure(suite, store):
    """Prefill tok/s, decode tok/s and cache MiB against context length, one line per label."""
    plt = pyplot()
    frame = metrics_frame(store)
    if frame.empty or frame[frame.suite == "efficiency"].empty:
        return None
    rows = frame[frame.suite == "efficiency"]
    colours = label_colours(store)
    shown = ("prefill_tokens_per_s", "decode_tokens_per_s", "cache_bytes")
    fig, axes = plt.subplots(1, len(shown), figsize=(4 * len(shown), 3.5), constrained_layout=True)
    for ax, metric in zip(axes, shown):
        heading, scale, _ = COLUMNS[metric]
        sub = rows[rows.metric == metric]
        for label in sorted(sub.label.unique()):
            line = sub[sub.label == label].sort_values("context_length")
            ax.plot(line.context_length / 1024, line.value / scale, marker="o", ms=3, color=colours[label],
                    label=plot_label(label))
        ax.set_title(heading)
        ax.set_xlabel("context length (K tokens)")
        ax.set_xscale("log", base=2)
        if not sub.empty and (sub.value > 0).all():
            ax.set_yscale("log")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=min(4, max(1, len(labels))))
    return fig
