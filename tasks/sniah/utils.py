"""Thin shims: lm-eval calls these; the work is in ccq_eval.suites.sniah."""

from ccq_eval.suites.sniah.plugin import dataset_for_task
from ccq_eval.suites.sniah.scoring import process_results  # noqa: F401


def sniah_1(**metadata):
    return dataset_for_task("sniah_1", **metadata)


def sniah_2(**metadata):
    return dataset_for_task("sniah_2", **metadata)


def sniah_3(**metadata):
    return dataset_for_task("sniah_3", **metadata)
