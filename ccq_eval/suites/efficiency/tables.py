"""The efficiency table (rows = models; per length: prefill and decoding tokens/s, the cache in MiB as measured
and as counted from the config, peak MiB); the figure is figures.py. Recall against state, which reads the
retrieval suites beside this one's cache, is a cross-suite table (catalogue/recall_state.py)."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length

MIB = 1 << 20
# metric -> (column heading, scale, higher is better)
COLUMNS = {"prefill_tokens_per_s": ("prefill tok/s", 1.0, True), "decode_tokens_per_s": ("decode tok/s", 1.0, True),
           "cache_bytes": ("cache MiB", MIB, False), "cache_bytes_analytic": ("cache MiB (config)", MIB, False),
           "peak_memory_bytes": ("peak MiB", MIB, False)}


def cells(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame()
    rows = frame[(frame.suite == "efficiency") & frame.metric.isin(list(COLUMNS))].copy()
    if rows.empty:
        return pd.DataFrame()
    rows["value"] = [v / COLUMNS[m][1] for v, m in zip(rows.value, rows.metric)]
    rows["column"] = [f"{COLUMNS[m][0]} {format_length(L)}" for m, L in zip(rows.metric, rows.context_length)]
    order = [f"{COLUMNS[m][0]} {format_length(L)}" for L in sorted(rows.context_length.unique()) for m in COLUMNS
             if ((rows.metric == m) & (rows.context_length == L)).any()]
    return rows.pivot(index="label", columns="column", values="value").reindex(columns=order)


@table("efficiency")
def cost_table(results, options) -> Table:
    values = cells(results.metrics)
    higher = {f"{heading} ": better for heading, _, better in COLUMNS.values()}
    return Table(values=values, digits=2, compare="ratio",
                 higher_is_better=lambda column: next((b for h, b in higher.items() if column.startswith(h)), True),
                 caption="Cost by context length: prefill and decoding throughput (tokens/s), the cache after the "
                         "prefill as measured and as counted from the config, peak memory (MiB); with --baseline, "
                         "each model's numbers as a multiple of the baseline's")

