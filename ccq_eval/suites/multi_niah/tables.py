"""The multi-needle accuracy table: S-NIAH's (columns task x length, Wilson intervals, paired deltas)."""

from __future__ import annotations

from ccq_eval.report.entries import table
from ccq_eval.suites.sniah.tables import accuracy_table


@table("multi-niah")
def multi_niah_table(results, options):
    from ccq_eval.suites.multi_niah import SUITE

    return accuracy_table(SUITE, results, options, "Multi-needle NIAH (RULER)")
