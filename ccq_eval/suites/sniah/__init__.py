"""S-NIAH (RULER's single-needle tasks): everything only this suite knows lives in this folder.

data.py (the generator), haystack.py (essay haystacks), plugin.py (what tasks/sniah calls),
scoring.py (RULER's string match, partial retrieval), driver.py (units -> outcomes), tables.py
(the accuracy and partial-retrieval tables, the needle-depth heatmap). Importing this module
imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import SeedMetric, Suite, SuiteOption


class SniahSuite(Suite):
    def driver(self, plan):
        from ccq_eval.suites.sniah.driver import SniahDriver

        return SniahDriver(plan)

    def tables(self):
        from ccq_eval.suites.sniah import tables

        return {"sniah": tables.accuracy_table, "sniah-partial": tables.partial_table}

    def figures(self):
        from ccq_eval.suites.sniah import tables

        return {"sniah-depth": tables.depth_figure}

    def paired_cells(self, store):
        from ccq_eval.suites.sniah import tables

        return tables.paired_cells(self, store)

    def task_files(self):
        from ccq_eval.suites.sniah.driver import TASK_VERSION
        from ccq_eval.suites.task_files import task_yaml

        return {f"{task}.yaml": task_yaml(self.name, task, {"sniah_task": task}, TASK_VERSION) for task in self.tasks}


SUITE = SniahSuite(
    name="sniah",
    tasks=("sniah_1", "sniah_2", "sniah_3"),
    default_lengths=(1024, 2048, 4096, 8192),
    default_samples=500,
    display={"sniah_1": "S1", "sniah_2": "S2", "sniah_3": "S3"},
    options=(SuiteOption("haystack", "essay haystack for S-NIAH-2/3: a .txt/.jsonl file or folder (default: "
                                     "DATA_DIR/haystack, else the shipped ccq-essays)"),),
    seed_metrics=(SeedMetric("score", "acc", True), SeedMetric("answer_nll", "answer NLL", False)),
)
