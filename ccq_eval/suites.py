"""Suites as data: name -> task ids, default lengths and samples, display names. Parsing of the
shared flags (lengths, task subsets) lives here too, so every suite reads them the same way."""

from __future__ import annotations

import re
from dataclasses import dataclass, field


class SuiteError(ValueError):
    """A suite, task or flag value that does not exist; the message says what does."""


@dataclass(frozen=True)
class Suite:
    name: str
    tasks: tuple[str, ...]  # task ids, as stored in the store and named in tasks/
    default_lengths: tuple[int, ...]
    default_samples: int | None  # None: every example
    display: dict[str, str] = field(default_factory=dict)  # task id -> the paper's abbreviation
    primary_metric: str = "score"
    fixed_lengths: bool = False  # the suite ignores --lengths (lm: lm-eval's own window)
    extra_tasks: tuple[str, ...] = ()  # accepted by --tasks, not run by default (not the paper's)

    def short(self, task: str) -> str:
        return task.removeprefix(f"{self.name}_")

    @property
    def all_tasks(self) -> tuple[str, ...]:
        return self.tasks + self.extra_tasks


SUITES: dict[str, Suite] = {
    "lm": Suite(
        name="lm",
        tasks=("wikitext", "lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge",
               "social_iqa", "boolq"),
        default_lengths=(2048,),
        default_samples=None,
        display={"wikitext": "Wiki", "lambada_openai": "LMB", "piqa": "PIQA", "hellaswag": "Hella",
                 "winogrande": "Wino", "arc_easy": "ARC-e", "arc_challenge": "ARC-c", "social_iqa": "SIQA",
                 "boolq": "BoolQ"},
        primary_metric="acc",
        fixed_lengths=True,
    ),
    "sniah": Suite(
        name="sniah",
        tasks=("sniah_1", "sniah_2", "sniah_3"),
        default_lengths=(1024, 2048, 4096, 8192),
        default_samples=500,
        display={"sniah_1": "S1", "sniah_2": "S2", "sniah_3": "S3"},
    ),
    "longppl": Suite(
        name="longppl",
        tasks=tuple(f"longppl_{c}" for c in ("govreport", "qmsum", "narrativeqa", "qasper", "codeparrot", "pg19")),
        default_lengths=tuple(range(4096, 20480 + 1, 2048)),
        default_samples=100,
        display={"longppl_govreport": "GovReport", "longppl_qmsum": "QMSum", "longppl_narrativeqa": "NarrativeQA",
                 "longppl_qasper": "Qasper", "longppl_codeparrot": "CodeParrot", "longppl_pg19": "PG19",
                 "longppl_essays": "Essays (seen)", "longppl_pydocs": "PyDocs", "longppl_pycode": "PyCode"},
        primary_metric="perplexity",
        # corpora every Python installation carries (data/longppl.py SHIPPED): the offline demo's
        extra_tasks=("longppl_essays", "longppl_pydocs", "longppl_pycode"),
    ),
    "longbench": Suite(
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
    ),
}


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise SuiteError(f"--suite {name!r}: unknown suite; available: {', '.join(SUITES)}, all")
    return SUITES[name]


_LENGTH = re.compile(r"^\s*(\d+)\s*([kK]?)\s*$")


def parse_lengths(text: str) -> tuple[int, ...]:
    """'1k,2k,4096' -> (1024, 2048, 4096); k means 1024 tokens of the model's tokenizer."""
    lengths = []
    for part in text.split(","):
        match = _LENGTH.match(part)
        if not match or int(match.group(1)) == 0:
            raise SuiteError(f"--lengths {text!r}: {part.strip()!r} is not a length; use positive token counts "
                             "like 1k,2k,4096 (k = 1024)")
        lengths.append(int(match.group(1)) * (1024 if match.group(2) else 1))
    if len(set(lengths)) != len(lengths):
        raise SuiteError(f"--lengths {text!r}: a length is repeated")
    return tuple(sorted(lengths))


def parse_tasks(suite: Suite, text: str | None) -> tuple[str, ...]:
    """A comma list of task ids; the short form without the suite prefix is accepted too."""
    if not text:
        return suite.tasks
    chosen = []
    for part in (p.strip() for p in text.split(",")):
        task = part if part in suite.all_tasks else f"{suite.name}_{part}"
        if task not in suite.all_tasks:
            raise SuiteError(f"--tasks: {part!r} is not a task of suite {suite.name!r}; "
                             f"tasks: {', '.join(suite.all_tasks)}")
        if task not in chosen:
            chosen.append(task)
    return tuple(chosen)


def format_length(tokens: int) -> str:
    return f"{tokens // 1024}K" if tokens % 1024 == 0 else str(tokens)
