"""LongBench's 14 English tasks as one table: key, generation budget
(dataset2maxlen), metric (dataset2metric) and eval.py's first-line rule. The task YAMLs in
tasks/longbench are generated from it (yamls.py)."""

from __future__ import annotations

from dataclasses import dataclass

TASK_VERSION = 1.0


@dataclass(frozen=True)
class LongBenchTask:
    key: str  # LongBench's dataset key
    max_gen: int  # LongBench's dataset2maxlen
    metric: str  # LongBench's dataset2metric
    first_line: bool  # eval.py keeps only the first line of these predictions


TASKS: dict[str, LongBenchTask] = {t.key: t for t in (
    LongBenchTask("narrativeqa", 128, "qa_f1_score", False),
    LongBenchTask("qasper", 128, "qa_f1_score", False),
    LongBenchTask("multifieldqa_en", 64, "qa_f1_score", False),
    LongBenchTask("hotpotqa", 32, "qa_f1_score", False),
    LongBenchTask("2wikimqa", 32, "qa_f1_score", False),
    LongBenchTask("musique", 32, "qa_f1_score", False),
    LongBenchTask("gov_report", 512, "rouge_score", False),
    LongBenchTask("qmsum", 512, "rouge_score", False),
    LongBenchTask("multi_news", 512, "rouge_score", False),
    LongBenchTask("trec", 64, "classification_score", True),
    LongBenchTask("triviaqa", 32, "qa_f1_score", True),
    LongBenchTask("samsum", 128, "rouge_score", True),
    LongBenchTask("lcc", 64, "code_sim_score", False),
    LongBenchTask("repobench-p", 64, "code_sim_score", False),
)}
