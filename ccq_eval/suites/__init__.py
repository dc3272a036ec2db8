"""The suite registry {name: Suite}. The runner, the CLI and the renderers know suites only
through this and the interface in base.py; each suite's own code lives in its folder."""

from __future__ import annotations

import importlib

from ccq_eval.suites.base import Suite, SuiteError, format_length, parse_lengths, parse_tasks

# One line per suite: the name of its folder (suites/<name>/, whose __init__.py defines SUITE). The order is
# that of --suite all and of the tables: the paper's.
REGISTERED = (
    "lm",
    "sniah",
    "multi_niah",
    "ruler",
    "recall",
    "babilong",
    "longppl",
    "longbench",
    "efficiency",
)

SUITES: dict[str, Suite] = {s.name: s for s in (importlib.import_module(f"ccq_eval.suites.{n}").SUITE
                                                 for n in REGISTERED)}
ALL_ORDER = tuple(name for name, suite in SUITES.items() if suite.in_all)  # --suite all: the paper's tables


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise SuiteError(f"--suite {name!r}: unknown suite; available: {', '.join(SUITES)}, all")
    return SUITES[name]


__all__ = ["ALL_ORDER", "SUITES", "Suite", "SuiteError", "format_length", "get_suite", "parse_lengths", "parse_tasks"]
