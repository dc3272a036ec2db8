"""The CLI as a package: one module per command, each registered once with its parser and handler; the
lists its help shows come from the registries (a suite added there reaches `run`, `tables` and `curves`
help with no edit in cli/); a mistake is one line; the package loads no heavy library."""

from __future__ import annotations

import argparse

import pytest

from ccq_eval import cli
from ccq_eval.cli import COMMANDS, build_parser, main


def subparsers() -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def help_of(command: str) -> str:
    """The help text on one line (argparse wraps at the terminal's width, and breaks names at hyphens: a wide one)."""
    import os
    from unittest import mock

    with mock.patch.dict(os.environ, {"COLUMNS": "10000"}):
        return " ".join(subparsers()[command].format_help().split())


def test_every_command_is_one_module_with_its_parser_and_handler():
    assert list(subparsers()) == list(COMMANDS)
    assert {m.__name__.rsplit(".", 1)[-1] for m in COMMANDS.values()} == {
        "run", "runs", "tables", "curves", "view", "rescore", "data", "ingest", "export", "env", "warmup", "wheelhouse",
        "zoo", "lm_eval", "include_path"}
    for name, module in COMMANDS.items():
        assert module.NAME == name and callable(module.add)
        assert callable(getattr(module, "handle", None) or getattr(module, "handle_raw", None)), name


def test_the_help_lists_come_from_the_registries(monkeypatch):
    from ccq_eval.report import entries
    from ccq_eval.suites import SUITES
    from tests.oracle import scripted_suite

    plain = scripted_suite("toy", ("toy_a",), (8, 16))
    toy = type(plain)(**{**plain.__dict__, "length_means": "toy tokens", "samples_mean": "toys"})
    monkeypatch.setitem(SUITES, "toy", toy)
    monkeypatch.setitem(entries.TABLES, "toy-table", entries.Entry("toy-table", lambda results, options: None))
    monkeypatch.setitem(entries.FIGURES, "toy-fig", entries.Entry("toy-fig", lambda results: None))
    assert "toy-table, all (default)" in help_of("tables") and "toy-fig, or every figure with data (default)" in help_of("curves")
    run_help = help_of("run")
    assert "toy: toy tokens (default 8,16)" in run_help and "toy: toys (default 1)" in run_help
    assert "sniah: prompt + 128 generated tokens <= L (default 1k,2k,4k,8k)" in run_help
    monkeypatch.undo()
    assert "toy-table" not in help_of("tables") and "toy-fig" not in help_of("curves") and "toy" not in SUITES


@pytest.mark.parametrize("argv,message", [
    (["frobnicate"], "unknown command 'frobnicate'; commands: run, runs, tables"),
    (["tables", "--table", "nope", "--store", "x.db"], "--table 'nope': unknown; available: lm, sniah"),
    (["curves", "--figure", "nope"], "--figure 'nope': unknown; available: sniah-depth, babilong, longppl, efficiency"),
])
def test_a_mistake_is_one_line_and_exit_2(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_importing_the_cli_package_imports_every_command_and_no_heavy_library():
    import subprocess
    import sys

    code = ("import sys, ccq_eval.cli; ccq_eval.cli.build_parser(); "
            "print(sorted(m for m in ('torch', 'fla', 'transformers', 'lm_eval', 'pandas', 'matplotlib') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]" and len(cli.COMMANDS) == 15
