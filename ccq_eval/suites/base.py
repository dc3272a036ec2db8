"""The suite interface the runner knows, and the parsing of the flags every suite shares.

A ``Suite`` is what only that suite knows, as data (task ids, default lengths and samples, display
names, its own flags) and factories it imports lazily (its driver), so that reading the registry costs nothing.
Its tables and figures register themselves in its tables.py / figures.py (report/entries.py). Its driver
(suites/driver.py) evaluates the units the runner plans for it, in three stages: data, generate, score.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator

from ccq_eval.errors import BadInput
from ccq_eval.suites.driver import Driver, DriverInputs


class SuiteError(BadInput):
    """A suite, task or flag value that does not exist; the message says what does."""


@dataclass(frozen=True)
class SuiteOption:
    """A flag only this suite reads: ``--<name>`` on `ccq-eval run`. The runner parses it once (``kind`` of the
    text, one of ``choices`` when given) and hands the driver ``inputs.options[name]``, ``default`` when not given."""

    name: str
    help: str
    kind: Callable[[str], Any] = str
    default: Any = None
    choices: tuple = ()

    def parse(self, value):
        if value is None:
            return self.default
        if isinstance(value, str):
            try:
                value = self.kind(value)
            except (TypeError, ValueError):
                raise SuiteError(f"--{self.name} {value!r}: not a {getattr(self.kind, '__name__', 'value')}") from None
        if self.choices and value not in self.choices:
            raise SuiteError(f"--{self.name} {value!r}: unknown; use one of {', '.join(map(str, self.choices))}")
        return value


@dataclass(frozen=True)
class SeedMetric:
    """A metric the cross-suite seeds table shows (mean ± sd over a model's seeds)."""

    metric: str
    column_suffix: str
    higher_is_better: bool


@dataclass(frozen=True)
class SampleView:
    """How the viewer's sample pages show this suite's samples (view/)."""

    target: str | None = "expected"  # heading of Sample.target (None: not shown)
    prediction: bool = True  # a generation suite shows the prediction
    score: str = "score"  # heading of Sample.score
    # scores 0-100 with a correct / wrong filter; correct means score > 0, as S-NIAH's stored "correct" metric counts
    graded: bool = True
    fields: tuple[tuple[str, tuple[str, ...]], ...] = ()  # (heading, Sample.fields keys: the first present is shown)
    depth: str | None = None  # the heading (of ``fields``) the needle-depth filter bins, in %
    # what each sample shows of its frozen prompt record: (record, width) -> {"before", "needle", "after"} with
    # ``width`` characters each side, or None (None: no context shown; suites/prompt_context.py builds one)
    context: Callable[[dict, int], dict | None] | None = None
    prompt_field: str = "input"  # the frozen record's whole prompt (what `ccq-eval view --prompts` embeds)


@dataclass(frozen=True)
class DataFetch:
    """`ccq-eval data fetch <suite>`: the names its ``--corpora`` accepts, and the download of ``names`` (None: every
    one) into the data cache, yielding each name as it is frozen. Both import what they need when called."""

    names: Callable[[], tuple[str, ...]]
    fetch: Callable[[list[str] | None], Iterator[str]]


@dataclass(frozen=True)
class Suite(ABC):
    name: str
    tasks: tuple[str, ...]  # task ids, as stored in the store and named in tasks/
    default_lengths: tuple[int, ...]
    default_samples: int | None  # None: every example
    display: dict[str, str] = field(default_factory=dict)  # task id -> the paper's abbreviation
    fixed_lengths: bool = False  # the suite ignores --lengths (lm: lm-eval's own window)
    extra_tasks: tuple[str, ...] = ()  # accepted by --tasks, not run by default (not the paper's)
    any_lm_eval_task: bool = False  # any task lm-eval knows is one of its tasks (the lm suite: lm-eval's own)
    options: tuple[SuiteOption, ...] = ()  # flags of `ccq-eval run` that only this suite reads
    seed_metrics: tuple[SeedMetric, ...] = ()  # what the seeds table shows of this suite
    fetcher: DataFetch | None = None  # `ccq-eval data fetch <name>` (None: it has no data to fetch)
    in_all: bool = True  # run by --suite all (cost is measured on its own, on a quiet machine)
    length_means: str = "L tokens"  # what a context length budgets, in --lengths' help
    samples_mean: str = "items"  # what --samples counts, in its help
    # older unit keys hashed the length a second time, as settings["max_length"]; such a suite keeps that
    # form so stores written then resume with nothing rerun
    length_in_key_settings: bool = False
    sample_view: SampleView | None = None  # None: the viewer lists its metrics only (no per-sample rows)
    # the data cache folder where its driver's data stage freezes each unit's records (read back by content
    # fingerprint: the viewer's needle context, `ccq-eval rescore`)
    records_folder: str | None = None
    # why `ccq-eval rescore` cannot re-score its units ("": it can, through its driver's score stage)
    not_rescorable: str = ""
    # a retrieval suite (its primary score is retrieval accuracy, %): the name of its tasks' mean in the recall-state
    # table and figure ("": not one)
    retrieval: str = ""
    # what --lengths 0 means to this suite, in its help ("": 0 is not one of its lengths)
    zero_length: str = ""
    # the tasks tasks/<name>/ carries as stock lm-eval plugins (empty: every task it runs)
    plugin_tasks: tuple[str, ...] = ()

    def short(self, task: str) -> str:
        return task.removeprefix(f"{self.name}_")

    def display_name(self, task: str) -> str:
        """The paper's abbreviation; a task this version does not know (a newer ccq-eval's) shows as its own id."""
        return self.display.get(task, task)

    def task_order(self, task: str) -> int:
        """Where a task's columns go: the suite's order, a task it does not know last."""
        return self.all_tasks.index(task) if task in self.all_tasks else len(self.all_tasks)

    @property
    def all_tasks(self) -> tuple[str, ...]:
        return self.tasks + self.extra_tasks

    @abstractmethod
    def driver(self, inputs: DriverInputs) -> Driver:
        """The driver for one run of this suite (suites/driver.py)."""

    def parse_options(self, given: dict) -> dict:
        """Every option of this suite, typed: the given value parsed, else its default."""
        return {o.name: o.parse(given.get(o.name)) for o in self.options}

    def paired_cells(self, results) -> dict:
        """column -> report.paired_tests.ScoreCell / PerplexityCell: the per-sample numbers (of ``results``, the
        report's snapshot) the pairs table tests two labels on (none by default)."""
        return {}

    def task_files(self) -> dict[str, str]:
        """file name -> content of this suite's generated files in tasks/<name>/ (task_files.py), if it has any."""
        return {}

    def lm_eval_units(self, task: str, results) -> list[tuple] | str | None:
        """One task of an lm-eval results file (``results``: interchange.lm_eval_document.Results) as units of
        this suite, [(unit, metric rows, sample rows)] (one per length for a length suite); a reason it is left
        out; or None if the task is not this suite's."""
        return None


_LENGTH = re.compile(r"^\s*(\d+)\s*([kK]?)\s*$")
MAX_LENGTH = 1 << 20  # 1024k tokens: past any model this harness evaluates; more only grows prompts until memory runs out


def parse_lengths(text: str, zero: bool = False) -> tuple[int, ...]:
    """'1k,2k,4096' -> (1024, 2048, 4096); k means 1024 tokens of the model's tokenizer. ``zero``: 0 is a length too
    (a suite whose ``zero_length`` gives it a meaning)."""
    if not text.strip():
        raise SuiteError("--lengths '': empty; give lengths like 1k,2k,4096 or drop the flag")
    lengths = []
    for part in text.split(","):
        match = _LENGTH.match(part)
        if not match or (int(match.group(1)) == 0 and not zero):
            raise SuiteError(f"--lengths {text!r}: {part.strip()!r} is not a length; use positive token counts "
                             "like 1k,2k,4096 (k = 1024)")
        lengths.append(int(match.group(1)) * (1024 if match.group(2) else 1))
        if lengths[-1] > MAX_LENGTH:
            raise SuiteError(f"--lengths {text!r}: {part.strip()} is more than {MAX_LENGTH // 1024}k tokens; "
                             "use lengths up to 1024k")
    if len(set(lengths)) != len(lengths):
        raise SuiteError(f"--lengths {text!r}: a length is repeated")
    return tuple(sorted(lengths))


def plugin_lengths(suite: Suite, max_seq_lengths) -> list[int]:
    """The lengths a task plugin of ``suite`` builds under stock lm-eval: its metadata's ``max_seq_lengths`` (a
    list or one number), else the suite's defaults."""
    if not max_seq_lengths:
        return list(suite.default_lengths)
    given = max_seq_lengths if isinstance(max_seq_lengths, (list, tuple)) else [max_seq_lengths]
    try:
        wanted = [int(length) for length in given]
    except (TypeError, ValueError):
        wanted = []
    if not wanted or min(wanted) <= 0:
        raise SuiteError(f"max_seq_lengths {max_seq_lengths!r}: not a list of token counts; pass --metadata "
                         "'{\"max_seq_lengths\": [4096, 8192]}'")
    return wanted


def parse_tasks(suite: Suite, text: str | None) -> tuple[str, ...]:
    """A comma list of task ids; the short form without the suite prefix is accepted too."""
    if text is None:
        return suite.tasks
    if not text.strip():
        raise SuiteError("--tasks '': empty; name tasks (e.g. " + ",".join(suite.tasks[:2]) + ") or drop the flag")
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
