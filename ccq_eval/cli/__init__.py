"""`ccq-eval`: one module per command, each with ``add(subparsers)`` and ``handle(args)``; the suites, tables
and figures its help lists come from the registries. ``main`` is the entry point.

Exit codes: 0 every unit complete; 1 a unit failed; 2 bad input (one line on stderr, nothing written);
130 Ctrl-C, 143 SIGTERM (finished units are kept; rerun to resume).
"""

from __future__ import annotations

import argparse
import sys

from ccq_eval.cli import (curves, data, env, export, include_path, ingest, lm_eval, rescore, run, runs, tables,
                          view, warmup, wheelhouse, zoo)
from ccq_eval.cli.common import Parser
from ccq_eval.errors import BadInput, StoreWriteFailure
from ccq_eval.text import visible

# in the order --help lists them
COMMANDS = {module.NAME: module for module in (run, runs, tables, curves, view, rescore, data, ingest, export, env,
                                               warmup, wheelhouse, zoo, lm_eval, include_path)}

DESCRIPTION = """run suites into a results store, render its tables and figures, move results in and out

    ccq-eval --model CKPT --suite NAME [...]      (the same as `ccq-eval run ...`)
    ccq-eval tables --format latex               (every table; ccq-eval tables --help names them)
    ccq-eval curves                              (every figure with data)
    ccq-eval view                                (one offline HTML file: tables, figures, every sample)

Exit codes: 0 every unit complete; 1 a unit failed; 2 bad input (one line on stderr, nothing written);
130 Ctrl-C, 143 SIGTERM (finished units are kept; rerun to resume)."""


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="ccq-eval", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter)
    subparsers = parser.add_subparsers(dest="command", parser_class=Parser)
    for module in COMMANDS.values():
        module.add(subparsers)
    return parser


def _dispatch(argv: list[str]) -> int:
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        raise BadInput(f"unknown command {argv[0]!r}; commands: {', '.join(COMMANDS)} "
                       "(or ccq-eval --model CKPT --suite NAME to run; see ccq-eval --help)")
    if argv and argv[0] == lm_eval.NAME:  # every argument after it is lm-eval's, untouched by our parser
        return lm_eval.handle_raw(argv[1:])
    if argv and argv[0] not in COMMANDS and argv[0] not in ("-h", "--help"):
        argv = [run.NAME, *argv]  # `ccq-eval --model X --suite Y` is `ccq-eval run ...`
    refuse_empty_values(argv)
    args = build_parser().parse_args(argv)
    if args.command is None:
        build_parser().print_help()
        return 2
    return COMMANDS[args.command].handle(args)


def refuse_empty_values(argv: list[str]) -> None:
    """An empty value (an unset variable in a job script: ``--shard "$TASK"``) is bad input, never "not given"."""
    for at, item in enumerate(argv):
        flag, equals, value = item.partition("=")
        if item.startswith("--") and equals and not value.strip():
            raise BadInput(f"{flag} {value!r}: an empty value; give one, or leave {flag} out")
        if not item.strip():
            before = argv[at - 1] if at and argv[at - 1].startswith("-") else None
            what = f"{before} {item!r}" if before else f"argument {at + 1} ({item!r})"
            raise BadInput(f"{what}: an empty value; give one" + (f", or leave {before} out" if before else ""))


def main(argv: list[str] | None = None) -> int:
    import warnings

    # fla says so on import on every machine without a GPU; there the CPU backend runs its ops, as intended
    warnings.filterwarnings("ignore", message="Triton is not supported on current platform")
    try:
        return _dispatch(list(sys.argv[1:] if argv is None else argv))
    except BadInput as exc:  # every input error of every suite derives from it
        print(f"ccq-eval: error: {visible(str(exc))}", file=sys.stderr)  # one line, whatever a library said
        return 2
    except KeyboardInterrupt:  # before a run began (loading, planning): nothing was written
        print("ccq-eval: interrupted before any unit ran; nothing was written", file=sys.stderr)
        return 130
    except StoreWriteFailure as exc:  # mid-run: finished units are kept, the failed write left nothing
        print(f"ccq-eval: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
