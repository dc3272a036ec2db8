"""`ccq-eval runs`: list the store's runs, or delete one with its units, metrics and samples."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import add_store
from ccq_eval.errors import BadInput
from ccq_eval.text import visible

NAME = "runs"


def add(subparsers) -> None:
    runs = subparsers.add_parser(NAME, help="list runs in the store, or delete one")
    add_store(runs)
    runs.add_argument("--delete", metavar="ID", help="delete this run and its units, metrics and samples")


def _delete(args) -> int:
    from ccq_eval.store import Store

    if not args.delete.strip():
        raise BadInput("--delete '': pass the id of a run (see ccq-eval runs)")
    if not Path(args.store).exists():
        raise BadInput(f"--delete {args.delete!r}: no store {args.store!r} (pass the --store that holds the run)")
    if not Store(args.store).writes.delete_run(args.delete):
        raise BadInput(f"--delete {args.delete!r}: no run with that id in {args.store} (see ccq-eval runs)")
    print(f"deleted run {args.delete}")
    return 0


def handle(args) -> int:
    from ccq_eval.store import Store

    if args.delete is not None:
        return _delete(args)
    print(f"{'id':<38}{'label':<24}{'started':<27}{'status':<12}units")
    for run in Store(args.store, readonly=True).reads.runs():
        label = visible(run.label)  # a stored label's controls never reach the terminal raw
        print(f"{run.id:<38}{label[:23]:<24}{run.started:<27}{run.status:<12}{run.complete_units}/{run.units}")
    return 0
