"""The recall table, across suites, laid out as Gated DeltaNet's Table 4: SWDE, SQuAD, FDA, in-context TriviaQA, NQ
and DROP (the recall suite's, each document cut to the length), and their average where a model has all six. A model
with no SWDE, SQuAD or FDA of the recall suite at a length shows the lm suite's (lm-eval's own swde,
squad_completion and fda, whose documents are not cut) in those columns, marked "(lm)" in its label. At 2K alone
(the length GDN reports, whose rows --reference adds under the same names): the plain column names; otherwise each
length's columns carry it."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length
from ccq_eval.suites.recall.tasks import TASKS

COLUMNS = {spec.column: task for task, spec in TASKS.items()}  # SWDE, SQD, FDA, TQA, NQ, Drop
LM_TASKS = {"SWDE": "swde", "SQD": "squad_completion", "FDA": "fda"}  # the lm suite's, read whole
REPORTED_LENGTH = 2048  # Table 4: "input truncated to 2K tokens"


def recall_cells(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame()
    rows = frame[frame.metric == "contains"]
    recall = rows[(rows.suite == "recall") & rows.task.isin(COLUMNS.values())]
    if recall.empty:
        return pd.DataFrame()
    own = recall.pivot_table(index=["label", "context_length"], columns="task", values="value", aggfunc="last")
    lm = rows[(rows.suite == "lm") & rows.task.isin(LM_TASKS.values())].pivot_table(
        index="label", columns="task", values="value", aggfunc="last")
    lengths = sorted(set(recall.context_length))
    cells = {}
    for label in sorted(set(recall.label) | set(lm.index)):
        for length in lengths:
            mine = own.loc[(label, length)] if (label, length) in own.index else pd.Series(dtype=float)
            values = {c: mine.get(task) for c, task in COLUMNS.items()}
            values = {c: None if pd.isna(v) else v for c, v in values.items()}
            borrowed = {c: lm.loc[label, task] for c, task in LM_TASKS.items()
                        if values[c] is None and label in lm.index and pd.notna(lm.loc[label].get(task))}
            values.update(borrowed)  # SWDE / SQD / FDA from lm-eval's own, uncut tasks: the row says so
            suffix = "" if lengths == [REPORTED_LENGTH] else f" {format_length(length)}"
            row = cells.setdefault(label + (" (lm)" if borrowed else ""), {})
            row.update({c + suffix: v for c, v in values.items()})
            six = list(values.values())
            row["Avg" + suffix] = None if any(v is None for v in six) else sum(six) / len(six)  # all six, or none
    out = pd.DataFrame.from_dict(cells, orient="index").astype(float)
    out.index.name = "label"
    return out


@table("recall", about="SWDE, SQuAD, FDA, TriviaQA, NQ, DROP (contains, %) and their average, as GDN's Table 4")
def recall_table(results, options) -> Table:
    return Table(values=recall_cells(results.metrics), digits=1,
                 caption=r"In-context recall (contains, \%), each document cut to the length; (lm): SWDE, SQuAD and "
                         r"FDA from lm-eval's own tasks, documents whole; Avg over the six",
                 reference=reference_rows("recall") if options.reference else pd.DataFrame())
