"""The multi-needle accuracy table: S-NIAH's (columns task x length, Wilson intervals, paired deltas)."""

from __future__ import annotations

from ccq_eval.suites.sniah.tables import accuracy_table as needle_accuracy_table


def accuracy_table(suite, frame, store, options):
    return needle_accuracy_table(suite, frame, store, options, title="Multi-needle NIAH (RULER)")
