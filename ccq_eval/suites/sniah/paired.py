"""S-NIAH's (and the multi-needle suite's) per-prompt scores for the pairs table and the paired deltas."""

from __future__ import annotations

from ccq_eval.report.paired_tests import ScoreCell
from ccq_eval.suites.sniah.columns import column_name, haystack_of


def paired_cells(suite, results) -> dict:
    """'S1 1K acc' -> ScoreCell: every label's per-prompt scores in that cell (the pairs table)."""
    frame = results.samples(suite.name, ("prompt_sha256", "score")).copy()
    if frame.empty:
        return {}
    haystacks = frame.settings.map(haystack_of)
    frame["column"] = [column_name(suite, t, h, L) + " acc" for t, h, L in zip(frame.task, haystacks, frame.context_length)]
    frame["order"] = [(suite.task_order(t), h if isinstance(h, str) else "", L)  # the accuracy table's order
                      for t, h, L in zip(frame.task, haystacks, frame.context_length)]
    cells = {column: ScoreCell(cell.pivot_table(index="prompt_sha256", columns="label", values="score", aggfunc="first"),
                               task=cell.task.iloc[0], length=int(cell.context_length.iloc[0]))
             for column, cell in frame.groupby("column", sort=False)}
    order = dict(zip(frame.column, frame.order))
    return {column: cells[column] for column in sorted(cells, key=order.get)}
