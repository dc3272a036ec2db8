"""LongBench's 14 English tasks: everything only this suite knows.

tasks.py (the one table of tasks: prompts, budgets, metrics; tasks/longbench's YAMLs are generated from it),
data.py (records, middle truncation, built prompts frozen in the cache), plugin.py (what
tasks/longbench calls), metrics.py + scoring.py (the official metrics and eval.py), driver.py,
tables.py. Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, SampleView, Suite


class LongBenchSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.longbench.driver import LongBenchDriver

        return LongBenchDriver(inputs)


    def lm_eval_units(self, task, results):
        from ccq_eval.interchange.lm_eval_document import length_units

        return length_units(self.name, task, results, "score", True) if task in self.all_tasks else None

    def task_files(self):
        from ccq_eval.suites.longbench.tasks import TASKS, generation_yaml
        from ccq_eval.suites.plugin_args import reported_lengths
        from ccq_eval.suites.task_files import metric_list_yaml, task_yaml

        metrics = metric_list_yaml("score", "mean", "!function utils.score_at_length", True, reported_lengths(self))
        return {f"longbench_{t.key}.yaml": task_yaml(self.name, f"longbench_{t.key}", {"longbench_key": t.key},
                                                     t.version, more=generation_yaml(t) + metrics)
                for t in TASKS.values()}


def _fetch_names():
    from ccq_eval.suites.longbench.tasks import TASKS

    return tuple(TASKS)


def _fetch(names):
    from ccq_eval.suites.longbench.data import fetch

    return fetch(names)


SUITE = LongBenchSuite(
    name="longbench",
    tasks=tuple(f"longbench_{k}" for k in (
        "narrativeqa", "qasper", "multifieldqa_en", "hotpotqa", "2wikimqa", "musique", "gov_report", "qmsum",
        "multi_news", "trec", "triviaqa", "samsum", "lcc", "repobench-p")),
    default_lengths=(16384,),
    default_samples=None,
    display={f"longbench_{k}": d for k, d in (
        ("narrativeqa", "NQA"), ("qasper", "QQA"), ("multifieldqa_en", "MFQ"), ("hotpotqa", "HQA"),
        ("2wikimqa", "2WM"), ("musique", "Mus"), ("gov_report", "GvR"), ("qmsum", "QMS"),
        ("multi_news", "MNs"), ("trec", "TRC"), ("triviaqa", "TQA"), ("samsum", "SSM"), ("lcc", "LCC"),
        ("repobench-p", "RBP"))},
    fetcher=DataFetch(_fetch_names, _fetch),
    length_means="prompt middle-truncated to fit L with the task's generation budget",
    samples_mean="examples per task",
    length_in_key_settings=True,
    sample_view=SampleView(target="answer", fields=(("id", ("id",)), ("prompt tokens", ("prompt_tokens",)),
                                                   ("truncated tokens", ("truncated_tokens",)))),
    records_folder="longbench-prompts",
)
