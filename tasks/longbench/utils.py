"""Thin shims: lm-eval calls these; the work is in ccq_eval.data.longbench and ccq_eval.scoring."""

from ccq_eval.data.longbench_task import dataset_for_task
from ccq_eval.scoring import longbench_process_results as process_results  # noqa: F401


def longbench_narrativeqa(**metadata):
    return dataset_for_task("narrativeqa", **metadata)

def longbench_qasper(**metadata):
    return dataset_for_task("qasper", **metadata)

def longbench_multifieldqa_en(**metadata):
    return dataset_for_task("multifieldqa_en", **metadata)

def longbench_hotpotqa(**metadata):
    return dataset_for_task("hotpotqa", **metadata)

def longbench_2wikimqa(**metadata):
    return dataset_for_task("2wikimqa", **metadata)

def longbench_musique(**metadata):
    return dataset_for_task("musique", **metadata)

def longbench_gov_report(**metadata):
    return dataset_for_task("gov_report", **metadata)

def longbench_qmsum(**metadata):
    return dataset_for_task("qmsum", **metadata)

def longbench_multi_news(**metadata):
    return dataset_for_task("multi_news", **metadata)

def longbench_trec(**metadata):
    return dataset_for_task("trec", **metadata)

def longbench_triviaqa(**metadata):
    return dataset_for_task("triviaqa", **metadata)

def longbench_samsum(**metadata):
    return dataset_for_task("samsum", **metadata)

def longbench_lcc(**metadata):
    return dataset_for_task("lcc", **metadata)

def longbench_repobench_p(**metadata):
    return dataset_for_task("repobench-p", **metadata)
