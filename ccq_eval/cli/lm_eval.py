"""`ccq-eval lm-eval ARGS`: lm-eval's own command line (every argument after it is lm-eval's, untouched by
ccq-eval's parser) with fla's and the CCQ families registered and the task plugins on --include_path."""

from __future__ import annotations

NAME = "lm-eval"


def add(subparsers) -> None:
    subparsers.add_parser(NAME, help="lm-eval's own command line (all its arguments follow) with fla's and the CCQ "
                                     "families registered and the task plugins on --include_path; "
                                     "pretrained=zoo:NAME works", add_help=False)


def handle_raw(argv: list[str]) -> int:
    from ccq_eval.lm.stock_cli import main

    return main(argv)
