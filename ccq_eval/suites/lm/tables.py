"""The language-modelling / zero-shot table, laid out as the GDN paper's, with a configurable average."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.reference import reference_rows
from ccq_eval.report.table import Table

# column -> (task, metric); accuracies are x100 in the store
COLUMNS = {"Wiki ppl": ("wikitext", "word_perplexity"), "LMB ppl": ("lambada_openai", "perplexity"),
           "LMB acc": ("lambada_openai", "acc"), "PIQA": ("piqa", "acc"), "Hella": ("hellaswag", "acc_norm"),
           "Wino": ("winogrande", "acc"), "ARC-e": ("arc_easy", "acc"), "ARC-c": ("arc_challenge", "acc_norm"),
           "SIQA": ("social_iqa", "acc"), "BoolQ": ("boolq", "acc")}
ACCURACIES = ("lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge", "social_iqa", "boolq")
LOWER_IS_BETTER = ("Wiki ppl", "LMB ppl")
# Based / JRT's real-world recall ("contains", x100): columns only where the store has them (not the paper's)
RECALL = {"SWDE": ("swde", "contains"), "FDA": ("fda", "contains"), "SQuAD": ("squad_completion", "contains")}


def accuracy_columns(chosen) -> list[str]:
    return [c for c, (task, _) in COLUMNS.items() if task in chosen and c not in LOWER_IS_BETTER]


def cells(frame: pd.DataFrame, average: list[str] | None = None, field: str = "value") -> pd.DataFrame:
    """Rows = labels, columns as the GDN paper's table, plus the average of the chosen accuracies
    (default its 8: LAMBADA acc and the 7 commonsense tasks); the header says how many."""
    chosen = list(average or ACCURACIES)
    unknown = [t for t in chosen if t not in ACCURACIES]
    if unknown:
        raise ValueError(f"--average: {', '.join(unknown)} has no accuracy column; choose from {', '.join(ACCURACIES)}")
    rows = frame[frame.suite == "lm"] if not frame.empty else frame
    if rows.empty:
        return pd.DataFrame()
    table = pd.DataFrame(index=sorted(rows.label.unique()))
    for column, (task, metric) in COLUMNS.items():
        table[column] = rows[(rows.task == task) & (rows.metric == metric)].set_index("label")[field]
    columns = accuracy_columns(chosen)
    table[f"Avg ({len(columns)})"] = table[columns].mean(axis=1, skipna=False) if field == "value" else float("nan")
    for column, (task, metric) in RECALL.items():
        if ((rows.task == task) & (rows.metric == metric)).any():
            table[column] = rows[(rows.task == task) & (rows.metric == metric)].set_index("label")[field]
    table.index.name = "label"
    return table


def reported() -> pd.DataFrame:
    """The reported rows, with the mean of the 8 accuracies (as measured rows show it) beside theirs."""
    ref = reference_rows("lm")
    if not ref.empty:
        columns = accuracy_columns(ACCURACIES)
        ref.insert(len(ref.columns) - 1, f"Avg ({len(columns)})", ref.reindex(columns=columns).mean(axis=1, skipna=False))
    return ref


@table("lm", takes=("average",))
def lm_table(results, options, average: list[str] | None = None) -> Table:
    """``average``: the tasks whose accuracy the Avg column averages (default: the GDN paper's eight)."""
    frame = results.metrics
    values = cells(frame, average)
    return Table(values=values, digits=2, higher_is_better=lambda column: column not in LOWER_IS_BETTER,
                 caption="Language modelling (perplexity) and zero-shot accuracy (\\%); Avg over "
                         + ", ".join(average or ACCURACIES),
                 stderr=None if values.empty else cells(frame, average, "stderr"),
                 reference=reported() if options.reference else pd.DataFrame())
