"""The seeds table, across suites: mean ± sample standard deviation over the seeds of every model
trained with more than one (labels NAME and NAME-s<k>, the zoo's naming). Run-to-run spread is what a
one-seed table hides."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.formats import Rendered, csv_text, grid
from ccq_eval.report.labels import model_name
from ccq_eval.suites import SUITES
from ccq_eval.suites.base import format_length

# (suite, metric) -> (column suffix, higher is better), as each suite declares
SEED_METRICS = {(suite.name, m.metric): (m.column_suffix, m.higher_is_better)
                for suite in SUITES.values() for m in suite.seed_metrics}


def seeds_cells(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(mean, sample standard deviation, seed count); rows = models, columns = S-NIAH accuracy and
    answer NLL and long-context perplexity per task and length."""
    keep = [(s, m) in SEED_METRICS for s, m in zip(frame.suite, frame.metric)] if not frame.empty else []
    rows = frame[keep].copy() if not frame.empty else frame
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["model"] = rows.label.map(model_name)
    seeds = rows.groupby("model").label.nunique()
    rows = rows[rows.model.isin(seeds[seeds > 1].index)]
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["column"] = [f"{SUITES[s].display_name(t)} {format_length(L)} {SEED_METRICS[(s, m)][0]}"
                      for s, t, L, m in zip(rows.suite, rows.task, rows.context_length, rows.metric)]
    rows["order"] = [(list(SUITES).index(s), list(SEED_METRICS).index((s, m)), SUITES[s].task_order(t), L)
                     for s, t, L, m in zip(rows.suite, rows.task, rows.context_length, rows.metric)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    stats = rows.groupby(["model", "column"]).value.agg(["mean", "std", "count"])
    mean, std, count = (stats[f].unstack("column").reindex(columns=columns) for f in ("mean", "std", "count"))
    return mean, std, count


@table("seeds", about="mean ± sd over NAME, NAME-s1, ...")
def seeds_table(results, options) -> Rendered | None:
    mean, std, count = seeds_cells(results.metrics)
    if mean.empty:
        return None
    cells = pd.DataFrame({c: [f"{m:.2f} ± {s:.2f}" if not pd.isna(m) else "" for m, s in zip(mean[c], std[c])]
                          for c in mean.columns}, index=mean.index)
    names = {m: f"{m} ({int(count.loc[m].max())} seeds)" for m in mean.index}
    direction = {c: next(h for suffix, h in SEED_METRICS.values() if c.endswith(" " + suffix)) for c in mean.columns}
    long = (pd.concat({"mean": mean.stack(), "std": std.stack(), "seeds": count.stack()}, axis=1)
            .rename_axis(["model", "column"]).reset_index())
    caption = "Mean ± sample standard deviation over seeds (accuracy \\%, answer NLL per token, perplexity)"
    return Rendered(grid(mean.rename(index=names), cells.rename(index=names), caption, direction),
                    csv_text(long, "%.4g", index=False))
