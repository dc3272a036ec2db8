"""An empty value is refused, never read as "not given": every flag of every command that takes a value, walked from
the parser, given "" (an unset variable in a job script: `--shard "$SLURM_ARRAY_TASK_ID"`) or `--flag=`, exits 2 with
one line naming the flag, and writes nothing."""

from __future__ import annotations

import argparse

import pytest

from ccq_eval.cli import COMMANDS, build_parser, main


def flags_taking_values() -> list[tuple[tuple[str, ...], str]]:
    """(the command's words, its flag) for every flag that takes a value, nested commands (zoo build) included."""
    found = []

    def walk(parser, words: tuple[str, ...]):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    if name != "lm-eval":  # every argument after it is lm-eval's own
                        walk(sub, (*words, name))
            elif action.option_strings and action.nargs != 0 and not isinstance(action, argparse._HelpAction):
                found.append((words, max(action.option_strings, key=len)))

    walk(build_parser(), ())
    return found


FLAGS = flags_taking_values()


def test_the_walk_finds_the_flags_of_every_command():
    assert (("run",), "--shard") in FLAGS and (("zoo",), "--models") in FLAGS
    assert {words[0] for words, _ in FLAGS} >= set(COMMANDS) - {"lm-eval", "include-path"}
    assert len(FLAGS) > 40


@pytest.mark.parametrize("command,flag", FLAGS, ids=lambda v: " ".join(v) if isinstance(v, tuple) else v)
def test_an_empty_value_is_refused_in_one_line(command, flag, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for argv in ([*command, flag, ""], [*command, f"{flag}="], [*command, flag, "  "]):
        assert main(argv) == 2, argv
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and flag in err[0] and "an empty value" in err[0], (argv, err)
    assert list(tmp_path.iterdir()) == []
