"""Long-context perplexity's per-sequence NLLs for the pairs table and the paired deltas."""

from __future__ import annotations

from ccq_eval.report.paired_tests import PerplexityCell
from ccq_eval.suites.base import format_length


def paired_cells(suite, results) -> dict:
    """'PyDocs 1K ppl' -> PerplexityCell: every label's per-sequence NLL and token counts (the pairs table)."""
    import pandas as pd

    frame = results.samples("longppl", ("prompt_sha256", "fields")).copy()
    if frame.empty:
        return {}
    frame["nll"] = pd.to_numeric(frame.fields.map(lambda f: f.get("nll_sum")), errors="coerce")
    frame["tokens"] = pd.to_numeric(frame.fields.map(lambda f: f.get("tokens")), errors="coerce")
    frame = frame[frame.nll.notna() & frame.tokens.notna()]  # samples without them (lm-eval's logs) pair nothing
    if frame.empty:
        return {}
    frame["column"] = [f"{suite.display_name(t)} {format_length(L)} ppl" for t, L in zip(frame.task, frame.context_length)]
    cells = {}
    for column, cell in frame.groupby("column", sort=False):
        nll, tokens = (cell.pivot_table(index="prompt_sha256", columns="label", values=f, aggfunc="first")
                       for f in ("nll", "tokens"))
        cells[column] = PerplexityCell(nll, tokens, task=cell.task.iloc[0], length=int(cell.context_length.iloc[0]))
    order = {c: (suite.task_order(t), L) for c, t, L in zip(frame.column, frame.task, frame.context_length)}
    return {column: cells[column] for column in sorted(cells, key=order.get)}  # the perplexity table's order
