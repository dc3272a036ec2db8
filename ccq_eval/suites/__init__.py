"""The suite registry {name: Suite}. The runner, the CLI and the renderers know suites only
through this and the interface in base.py; each suite's own code lives in its folder."""

from __future__ import annotations

from ccq_eval.suites import lm, longbench, longppl, sniah
from ccq_eval.suites.base import Suite, SuiteError, format_length, parse_lengths, parse_tasks

SUITES: dict[str, Suite] = {s.name: s for s in (lm.SUITE, sniah.SUITE, longppl.SUITE, longbench.SUITE)}
ALL_ORDER = tuple(SUITES)  # --suite all: the paper's tables, in order


def get_suite(name: str) -> Suite:
    if name not in SUITES:
        raise SuiteError(f"--suite {name!r}: unknown suite; available: {', '.join(SUITES)}, all")
    return SUITES[name]


__all__ = ["ALL_ORDER", "SUITES", "Suite", "SuiteError", "format_length", "get_suite", "parse_lengths", "parse_tasks"]
