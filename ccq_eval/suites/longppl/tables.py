"""Long-context perplexity's table (with t intervals over sequences) and the extrapolation curves."""

from __future__ import annotations

import math

import pandas as pd

from ccq_eval.report.figures import label_colours, plot_label, pyplot, training_lengths
from ccq_eval.report.frame import latest_samples, metrics_frame
from ccq_eval.report.paired_tests import PerplexityCell, delta_row_tests
from ccq_eval.report.intervals import exp_t_interval
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length

MAX_LENGTH_COLUMNS = 5  # per corpus in the table; the curves show every length


def cells(suite, frame: pd.DataFrame, metric: str = "perplexity") -> pd.DataFrame:
    """Rows = labels, columns = corpus x lengths (at most 5 evenly spaced per corpus, ends included).
    metric "ci_low" / "ci_high": the 95% interval bounds in the same layout."""
    if frame.empty:
        return pd.DataFrame()
    if metric in ("ci_low", "ci_high"):
        rows = frame[(frame.suite == "longppl") & (frame.metric == "nll_per_token")].copy()
        bounds = [exp_t_interval(v, se, n) for v, se, n in zip(rows.value, rows.stderr, rows.n)]
        rows["value"] = [b[0 if metric == "ci_low" else 1] for b in bounds]
        rows["metric"] = "perplexity"
        layout = cells(suite, frame)
        return cells(suite, rows).reindex(index=layout.index, columns=layout.columns)
    rows = frame[(frame.suite == "longppl") & (frame.metric == metric)].copy()
    if rows.empty:
        return pd.DataFrame()
    columns = []
    for task in suite.all_tasks:
        lengths = sorted(rows[rows.task == task].context_length.unique())
        if len(lengths) > MAX_LENGTH_COLUMNS:
            picks = {round(i * (len(lengths) - 1) / (MAX_LENGTH_COLUMNS - 1)) for i in range(MAX_LENGTH_COLUMNS)}
            lengths = [lengths[i] for i in sorted(picks)]
        columns += [(task, L) for L in lengths]
    rows["column"] = [f"{suite.display[t]} {format_length(L)}" for t, L in zip(rows.task, rows.context_length)]
    names = [f"{suite.display[t]} {format_length(L)}" for t, L in columns]
    return rows.pivot(index="label", columns="column", values="value").reindex(columns=names)


def perplexity_table(suite, frame: pd.DataFrame, store, options) -> Table:
    values = cells(suite, frame)
    low = high = None
    if options.ci and not values.empty:
        low, high = cells(suite, frame, "ci_low"), cells(suite, frame, "ci_high")
    paired = {}
    if options.ci and options.baseline and not values.empty:  # the delta rows' paired bootstrap per cell
        paired = delta_row_tests(paired_cells(suite, store), options.baseline, " ppl")
    return Table(values=values, low=low, high=high, digits=2, higher_is_better=lambda column: False, paired=paired,
                 caption="Perplexity by context length (lower is better)"
                         + (r" with 95\% intervals over sequences" if options.ci else ""),
                 reference=reference_rows("longppl") if options.reference else pd.DataFrame())


def paired_cells(suite, store) -> dict:
    """'PyDocs 1K ppl' -> PerplexityCell: every label's per-sequence NLL and token counts (the pairs table)."""
    import json

    frame = latest_samples(store, "longppl", "s.prompt_sha256, s.fields")
    if frame.empty:
        return {}
    fields = frame.fields.map(json.loads)
    frame["nll"], frame["tokens"] = fields.map(lambda f: f["nll_sum"]), fields.map(lambda f: f["tokens"])
    frame["column"] = [f"{suite.display.get(t, t)} {format_length(L)} ppl" for t, L in zip(frame.task, frame.context_length)]
    cells = {}
    for column, cell in frame.groupby("column", sort=False):
        nll, tokens = (cell.pivot_table(index="prompt_sha256", columns="label", values=f, aggfunc="first")
                       for f in ("nll", "tokens"))
        cells[column] = PerplexityCell(nll, tokens)
    order = {c: (suite.all_tasks.index(t), L) for c, t, L in zip(frame.column, frame.task, frame.context_length)}
    return {column: cells[column] for column in sorted(cells, key=order.get)}  # the perplexity table's order


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
