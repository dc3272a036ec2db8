"""`ccq-eval lm-eval ARGS`: lm-eval's own command line (every argument after it is lm-eval's, untouched by
ccq-eval's parser) with fla's and the CCQ families registered and the task plugins on --include_path."""

from __future__ import annotations

NAME = "lm-eval"


def add(subparsers) -> None:
    subparsers.add_parser(NAME, help="lm-eval's own command line (all its arguments follow) with fla's and the CCQ "
                                     "families registered and the task plugins on --include_path; "
                                     "pretrained=zoo:NAME works", add_help=False)


def plugin_needs(tasks: str, metadata: dict) -> dict[str, int]:
    """task -> the tokens its longest length takes in the model's context, for the task plugins among ``tasks``
    (a comma list): a length budgets the whole prompt and its generation, or the scored tokens."""
    from ccq_eval.suites import SUITES
    from ccq_eval.suites.base import plugin_lengths
    from ccq_eval.task_plugins import TASKS_DIR

    needs = {}
    for task in (t.strip() for t in tasks.split(",")):
        suite = next((s for s in SUITES.values() if task in (s.plugin_tasks or s.all_tasks)
                      and (TASKS_DIR / s.name).is_dir()), None)
        if suite is not None:
            needs[task] = max(plugin_lengths(suite, metadata.get("max_seq_lengths")))
    return needs


def handle_raw(argv: list[str]) -> int:
    from ccq_eval.lm.stock_cli import main

    return main(argv, plugin_needs)
