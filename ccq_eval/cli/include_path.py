"""`ccq-eval include-path`: the task plugins' folder, for stock `lm_eval --include_path`."""

from __future__ import annotations

NAME = "include-path"


def add(subparsers) -> None:
    subparsers.add_parser(NAME, help="print the task plugins' folder (stock lm_eval --include_path "
                                     "$(ccq-eval include-path))")


def handle(args) -> int:
    from ccq_eval.task_plugins import include_path

    print(include_path())
    return 0
