"""Recall against state size (Zoology's and Based's plot, for pretrained checkpoints): one point per model and
context length, its retrieval accuracy (each needle task and their mean) against the bytes of state it holds at
that length. The bytes are the efficiency suite's measurement of the model's own cache at that length when the
store has one, otherwise the count from the run's config and dtype (its family's ``cache_bytes``), and each point says which.

Here the state is what inference holds, dtype included: the recurrent state (float32) plus the short-convolution
state and CCQ's statistics, or the KV cache of an attention model, for batch 1. Zoology's ``state_size()``
counts elements of the recurrent state alone (no dtype, no convolution state), so its numbers are smaller by the
element size and the convolution term.

A cross-suite table (it reads the retrieval suites and the efficiency suite's cache); the figure is
recall_state_figure.py."""

from __future__ import annotations

import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.reference import REPORTED
from ccq_eval.report.table import Table
from ccq_eval.suites import SUITES
from ccq_eval.suites.base import format_length
from ccq_eval.suites.efficiency.tables import MIB
from ccq_eval.families import cache_bytes

MEASURED, COUNTED = "measured", "config"


def retrieval_suites() -> dict[str, str]:
    """The suites whose primary score is retrieval accuracy (%) -> the name of their mean (``Suite.retrieval``)."""
    return {name: suite.retrieval for name, suite in SUITES.items() if suite.retrieval}


def counted(config_and_dtype: tuple[dict, str] | None, length: int) -> int | None:
    """The config's count, or None where it has none (a family with no cache formula, or a stored config
    that lacks the fields: a hand-made or ingested store)."""
    if config_and_dtype is None:
        return None
    return cache_bytes(config_and_dtype[0], length, config_and_dtype[1])


def mean_column(suite: str) -> str:
    return f"{retrieval_suites()[suite]} mean"


def state_points(results) -> pd.DataFrame:
    """Rows: label, length, one column per retrieval task (display name), each suite's mean (only where the point
    has every one of that suite's tasks in the store: a mean over fewer would not compare), state_bytes,
    state_from."""
    frame = results.metrics
    if frame.empty:
        return pd.DataFrame()
    scores = frame[frame.suite.isin(list(retrieval_suites())) & (frame.is_primary == 1)]
    if scores.empty:
        return pd.DataFrame()
    accuracy = scores.pivot_table(index=["label", "context_length"], columns="task", values="value", aggfunc="last")
    means = {}
    for suite in retrieval_suites():
        tasks = [t for t in SUITES[suite].all_tasks if t in accuracy.columns]
        if tasks:
            means[mean_column(suite)] = accuracy[tasks].mean(axis=1).where(accuracy[tasks].notna().all(axis=1))
    display = {task: SUITES[suite].display.get(task, task) for suite, task in zip(scores.suite, scores.task)}
    tasks = [t for suite in retrieval_suites() for t in SUITES[suite].all_tasks if t in accuracy.columns]
    accuracy = accuracy[tasks].rename(columns=display).assign(**means)
    cache = frame[(frame.suite == "efficiency") & (frame.metric == "cache_bytes")]
    measured = {(label, L): value for label, L, value in zip(cache.label, cache.context_length, cache.value)}
    runs = results.runs
    rows = []
    for (label, length), row in accuracy.iterrows():
        if (label, length) in measured:
            state, source = measured[(label, length)], MEASURED
        else:
            run = runs.get(label)
            state = counted((run.config, run.dtype) if run is not None and run.config is not None else None, int(length))
            source = COUNTED if state is not None else None
        rows.append({"label": label, "length": int(length), **row.to_dict(), "state_bytes": state, "state_from": source})
    return pd.DataFrame(rows)


# The configurations the reported S-NIAH rows were measured on: the GDN paper's 1.3B Gated DeltaNet (fla's
# GatedDeltaNetConfig defaults are that model; a test compares them), in bf16, for the state it holds. The other
# reported rows (DeltaNet, Mamba2) are families with no cache formula.
PUBLISHED_CONFIGS = {
    "Gated DeltaNet": ({"model_type": "gated_deltanet", "hidden_size": 2048, "num_hidden_layers": 21, "num_heads": 6,
                        "head_dim": 256, "expand_v": 2.0, "use_short_conv": True, "conv_size": 4}, "bfloat16"),
}


def reported_points() -> pd.DataFrame:
    """The reported S-NIAH rows as points (label "model [source]", length, task columns, the S-NIAH mean, the
    state their published configuration holds at that length), for the models PUBLISHED_CONFIGS has."""
    from ccq_eval.report.reference import reported_cells
    from ccq_eval.suites.base import parse_lengths

    ref = reported_cells("sniah")
    ref = ref[ref.model.isin(list(PUBLISHED_CONFIGS))] if not ref.empty else ref
    if ref.empty:
        return pd.DataFrame()
    ref["task"], ref["length"] = ref.column.str.split(" ").str[0], ref.column.str.split(" ").str[1].map(
        lambda text: parse_lengths(text)[0])
    rows = []
    for (label, model, length), cell in ref.groupby(["label", "model", "length"], sort=False):
        scores = dict(zip(cell.task, cell.value))
        tasks = tuple(SUITES["sniah"].display.values())  # the paper's three: a mean only where all three are reported
        mean = sum(scores[t] for t in tasks) / len(tasks) if all(t in scores for t in tasks) else None
        rows.append({"label": label, "length": int(length), **scores, mean_column("sniah"): mean,
                     "state_bytes": counted(PUBLISHED_CONFIGS[model], int(length)), "state_from": COUNTED})
    return pd.DataFrame(rows)


def mean_columns(points: pd.DataFrame) -> list[str]:
    return [mean_column(suite) for suite in retrieval_suites() if mean_column(suite) in points.columns]


def recall_frame(points: pd.DataFrame, suffix: str = "") -> pd.DataFrame:
    """The table's numbers: one row per point ("label · 1K"), accuracies, the state in MiB as measured or as
    counted, and each suite's mean accuracy per MiB of state; ``suffix`` ends every row's label."""
    if points.empty:
        return pd.DataFrame()
    accuracy = [c for c in points.columns if c not in ("label", "length", "state_bytes", "state_from")]
    values = points[accuracy].copy()
    mib = points.state_bytes.astype(float) / MIB
    values["state MiB (measured)"] = mib.where(points.state_from == MEASURED)
    values["state MiB (config)"] = mib.where(points.state_from == COUNTED)
    for column in mean_columns(points):
        values[f"{column} per MiB"] = points[column] / mib
    values.index = [f"{label} · {format_length(L)}{suffix}" for label, L in zip(points.label, points.length)]
    return values


@table("recall-state", about="retrieval accuracy against the bytes of state each model holds")
def recall_state_table(results, options) -> Table:
    reference = recall_frame(reported_points(), REPORTED) if options.reference else pd.DataFrame()
    return Table(values=recall_frame(state_points(results)), digits=3, reference=reference,
                 higher_is_better=lambda column: not column.startswith("state"),
                 caption="Recall against state: retrieval accuracy (\\%) of each model at each length beside the "
                         "bytes of state it holds there (MiB; measured by the efficiency suite, else counted from "
                         "the config), and the mean accuracy per MiB; reported rows at their published configuration's "
                         "state")
