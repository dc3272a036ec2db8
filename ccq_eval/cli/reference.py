"""docs/cli.md, generated from the argument parser itself, so the reference cannot drift from the CLI.
A test checks that the committed file equals this output.

    python -m ccq_eval.cli.reference docs/cli.md     # rewrite it after changing a flag
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ccq_eval.cli import build_parser
from ccq_eval.scoped_env import scoped_environ

WIDTH = "100"  # argparse wraps at the terminal's width: fix it so the file does not depend on who ran this
HEADER = ("# Command-line reference\n\n"
          "Generated from `ccq_eval/cli/` by `python -m ccq_eval.cli.reference docs/cli.md`; edit the parser,\n"
          "not this file. `ccq-eval --model CKPT --suite NAME ...` is short for `ccq-eval run ...`.\n")


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # argparse offers no public way
    return dict(actions[0].choices) if actions else {}


def reference() -> str:
    parser = build_parser()
    with scoped_environ(COLUMNS=WIDTH):
        sections = [HEADER, "## ccq-eval\n", "```text\n" + parser.format_help().rstrip() + "\n```\n"]
        for name, sub in _subparsers(parser).items():
            sections += [f"## ccq-eval {name}\n", "```text\n" + sub.format_help().rstrip() + "\n```\n"]
    return "\n".join(sections)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[-1].strip(), file=sys.stderr)
        return 2
    Path(argv[0]).write_text(reference())
    print(f"written: {argv[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
