"""Long-context perplexity's per-sequence NLLs for the pairs table and the paired deltas."""

from __future__ import annotations

from ccq_eval.report.frame import latest_samples
from ccq_eval.report.paired_tests import PerplexityCell
from ccq_eval.suites.base import format_length


def paired_cells(suite, store) -> dict:
    """'PyDocs 1K ppl' -> PerplexityCell: every label's per-sequence NLL and token counts (the pairs table)."""
    import json

    frame = latest_samples(store, "longppl", ("prompt_sha256", "fields"))
    if frame.empty:
        return {}
    fields = frame.fields.map(json.loads)
    frame["nll"], frame["tokens"] = fields.map(lambda f: f["nll_sum"]), fields.map(lambda f: f["tokens"])
    frame["column"] = [f"{suite.display.get(t, t)} {format_length(L)} ppl" for t, L in zip(frame.task, frame.context_length)]
    cells = {}
    for column, cell in frame.groupby("column", sort=False):
        nll, tokens = (cell.pivot_table(index="prompt_sha256", columns="label", values=f, aggfunc="first")
                       for f in ("nll", "tokens"))
        cells[column] = PerplexityCell(nll, tokens, task=cell.task.iloc[0], length=int(cell.context_length.iloc[0]))
    order = {c: (suite.all_tasks.index(t), L) for c, t, L in zip(frame.column, frame.task, frame.context_length)}
    return {column: cells[column] for column in sorted(cells, key=order.get)}  # the perplexity table's order
