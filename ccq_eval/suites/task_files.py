"""The per-task YAMLs of tasks/<suite>/ (what stock lm-eval users point ``--include_path`` at), generated from
each suite's task table, lm-eval's own ``_generate_config.py`` habit. Each suite says what its files hold
(``Suite.task_files``); a test checks that the committed files equal these.

    python -m ccq_eval.suites.task_files tasks      # rewrite every suite's YAMLs after editing a table
"""

from __future__ import annotations

import sys
from pathlib import Path

HEADER = "# Generated from the {suite} suite's task table by ccq_eval/suites/task_files.py; edit the table, not this file.\n"


def task_yaml(suite: str, task: str, dataset_kwargs: dict[str, str], version: float, more: str = "") -> str:
    """One task: the suite's shared ``_<suite>_yaml``, the task's name, its data function (``utils.dataset``,
    told by ``dataset_kwargs`` which task to build) and its version; ``more`` is YAML the task adds."""
    kwargs = "".join(f"  {key}: {value}\n" for key, value in dataset_kwargs.items())
    return (HEADER.format(suite=suite) + f"include: _{suite}_yaml\n" f"task: {task}\n"
            "custom_dataset: !function utils.dataset\n" f"dataset_kwargs:\n{kwargs}" + more
            + f"metadata:\n  version: {version}\n")


def metric_list_yaml(metric: str, aggregation: str, at_length: str, higher_is_better: bool, lengths) -> str:
    """The overall metric and one metric per reported length (``"<L>"``, lm-eval's RULER naming), each with its
    aggregation (``at_length`` leaves the other lengths' documents out)."""
    higher = "true" if higher_is_better else "false"
    entries = [(metric, aggregation)] + [(f'"{length}"', at_length) for length in lengths]
    return "metric_list:\n" + "".join(f"  - metric: {name}\n    aggregation: {agg}\n    higher_is_better: {higher}\n"
                                      for name, agg in entries)


def generating_task_files(suite, task_kwarg: str, max_gen_toks: int, until: str, version: float) -> dict[str, str]:
    """Every task of a generating suite scored by ``score`` (overall and per length): greedy decoding of
    ``max_gen_toks`` tokens with ``until`` (YAML text: ``[]`` for none) as stock lm-eval's generate_until reads them,
    the data function told the task through ``task_kwarg``."""
    from ccq_eval.suites.plugin_args import reported_lengths

    generation = ("generation_kwargs:\n  do_sample: false\n  temperature: 0.0\n"
                  f"  max_gen_toks: {max_gen_toks}\n  until: {until}\n")
    metrics = metric_list_yaml("score", "mean", "!function utils.score_at_length", True, reported_lengths(suite))
    return {f"{task}.yaml": task_yaml(suite.name, task, {task_kwarg: task}, version, more=generation + metrics)
            for task in suite.tasks}


def write(root: Path) -> list[Path]:
    """Every registered suite's task files under root/<suite>/."""
    from ccq_eval.suites import SUITES

    paths = []
    for suite in SUITES.values():
        for name, text in suite.task_files().items():
            (root / suite.name / name).write_text(text)
            paths.append(root / suite.name / name)
    return paths


if __name__ == "__main__":
    for path in write(Path(sys.argv[1] if len(sys.argv) > 1 else "tasks")):
        print(path)
