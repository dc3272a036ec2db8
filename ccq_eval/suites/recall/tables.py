"""The recall table, laid out as Gated DeltaNet's Table 4: SWDE, SQuAD and FDA (lm-eval's own tasks, run by the lm
suite) beside in-context TriviaQA, NQ and DROP (this suite, per length), and their average where a model has all
six. At 2K alone (the length GDN reports, whose rows --reference adds under the same names): the plain column names;
otherwise each length's TQA / NQ / Drop and average carry it."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table
from ccq_eval.suites.base import format_length

LM_COLUMNS = {"SWDE": "swde", "SQD": "squad_completion", "FDA": "fda"}  # the lm suite's tasks, "contains"
RECALL_COLUMNS = {"TQA": "recall_triviaqa", "NQ": "recall_nq", "Drop": "recall_drop"}
REPORTED_LENGTH = 2048  # Table 4: "input truncated to 2K tokens"


def recall_cells(frame: pd.DataFrame) -> pd.DataFrame:
    if frame.empty:
        return pd.DataFrame()
    rows = frame[(frame.metric == "contains") & (((frame.suite == "lm") & frame.task.isin(LM_COLUMNS.values()))
                                                 | ((frame.suite == "recall") & frame.task.isin(RECALL_COLUMNS.values())))]
    if rows.empty or not (rows.suite == "recall").any():
        return pd.DataFrame()
    out = pd.DataFrame(index=sorted(rows.label.unique()))
    for column, task in LM_COLUMNS.items():
        out[column] = rows[(rows.suite == "lm") & (rows.task == task)].set_index("label").value
    lengths = sorted(set(rows[rows.suite == "recall"].context_length))
    for length in lengths:
        suffix = "" if lengths == [REPORTED_LENGTH] else f" {format_length(length)}"
        at = rows[(rows.suite == "recall") & (rows.context_length == length)]
        for column, task in RECALL_COLUMNS.items():
            out[column + suffix] = at[at.task == task].set_index("label").value
        six = list(LM_COLUMNS) + [c + suffix for c in RECALL_COLUMNS]
        out["Avg" + suffix] = out[six].mean(axis=1, skipna=False)  # only where a model has all six
    out.index.name = "label"
    return out


@table("recall", about="SWDE, SQuAD, FDA, TriviaQA, NQ, DROP (contains, %) and their average, as GDN's Table 4")
def recall_table(results, options) -> Table:
    return Table(values=recall_cells(results.metrics), digits=1,
                 caption=r"In-context recall (contains, \%): SWDE, SQuAD and FDA from the lm suite; TriviaQA, NQ and "
                         r"DROP with each document cut to the length; Avg over the six",
                 reference=reference_rows("recall") if options.reference else pd.DataFrame())
