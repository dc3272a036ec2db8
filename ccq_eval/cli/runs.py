"""`ccq-eval runs`: list the store's runs, check the store for rows whose run is gone, or delete a run with its units,
metrics and samples."""

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
    runs.add_argument("--check", action="store_true", help="list the rows whose run is gone (a store edited by hand, "
                                                           "which every reader leaves out); exit 1 if there are any")


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


def _check(args) -> int:
    from ccq_eval.store import Store

    if not Path(args.store).exists():
        raise BadInput(f"--store {args.store!r}: no such store; pass the --store to check")
    store = Store(args.store, readonly=True)
    found = store.reads.orphans()
    if not any(found.values()):
        print(f"{args.store}: every unit, metric row and sample belongs to a run")
        return 0
    print(f"{args.store}: {found['units']} unit(s), {found['metrics']} metric row(s) and {found['samples']} sample(s) "
          "belong to no run; every reader leaves them out")
    for unit_id, run_id, task, length, status in store.reads.orphan_units():
        print(f"  unit {unit_id} ({visible(task)} at {length}, {status}): its run {run_id} is gone")
    return 1


def handle(args) -> int:
    from ccq_eval.store import Store

    if args.delete is not None:
        return _delete(args)
    if args.check:
        return _check(args)
    from ccq_eval.store.merge_rules import missing_shards, shard

    runs = Store(args.store, readonly=True).reads.runs()
    partial = missing_shards(runs)
    rows = [(run.id, visible(run.label)[:40], run.started, "partial" if run.id in partial else run.status,
             f"{found[0]}/{found[1]}" if (found := shard(run)) else "-", f"{run.complete_units}/{run.units}")
            for run in runs]  # a stored label's controls never reach the terminal raw
    header = ("id", "label", "started", "status", "shard", "units")
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    for row in [header, *rows]:  # columns as wide as their widest value, two spaces apart
        print("  ".join(value.ljust(width) for value, width in zip(row, widths)).rstrip())
    for label, why in {visible(run.label): partial[run.id] for run in runs if run.id in partial}.items():
        print(f"partial: label {label!r}: {why} (ingest the missing shard's store to complete it)")
    return 0
