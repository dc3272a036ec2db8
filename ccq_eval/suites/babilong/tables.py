"""The BABILong table: S-NIAH's accuracy table over this suite's units (columns task x haystack x length, Wilson
intervals with --ci, paired deltas with --baseline; qa6-qa20 at 0K beside them), and the mean of QA1-QA5 at each length
where a model has all five on one haystack."""

from __future__ import annotations

import re

from ccq_eval.report.entries import table
from ccq_eval.suites.sniah.tables import accuracy_table

COLUMN = re.compile(r"^QA([1-5])( \(.*\))? (\S+)$")  # "QA1 (pg19) 4K": the five the mean is over


def with_averages(values):
    """QA1-QA5's mean beside each length's columns ("Avg (pg19) 4K"), only over a full set of the five."""
    groups: dict[tuple, list[str]] = {}
    for column in values.columns:
        if (match := COLUMN.match(str(column))) is not None:
            groups.setdefault((match.group(2) or "", match.group(3)), []).append(column)
    shown = values.copy()
    for (haystack, length), columns in groups.items():
        if len(columns) == 5:
            shown[f"Avg{haystack} {length}"] = values[columns].mean(axis=1, skipna=False)
    return shown


@table("babilong")
def babilong_table(results, options):
    from ccq_eval.suites.babilong import SUITE

    built = accuracy_table(SUITE, results, options, "BABILong (generated at each model's lengths, 0K: the statements alone)")
    if built.values.empty:
        return built
    built.values = with_averages(built.values)
    if built.low is not None:
        built.low, built.high = (frame.reindex(columns=built.values.columns) for frame in (built.low, built.high))
    return built
