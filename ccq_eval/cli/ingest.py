"""`ccq-eval ingest`: other stores (shards, other machines) merged in, or lm-eval's results files read in; every
source checked before the target store is touched, idempotent."""

from __future__ import annotations

import sys
from pathlib import Path

from ccq_eval.cli.common import add_store
from ccq_eval.errors import BadInput
from ccq_eval.text import visible

NAME = "ingest"


def add(subparsers) -> None:
    ingest = subparsers.add_parser(NAME, help="merge stores from other machines or shards, or lm-eval results JSON, "
                                              "into --store (idempotent)")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="stores to merge in; or lm-eval results_*.json files "
                        "(or the --output_path folders holding them; --log_samples files beside them come along)")
    ingest.add_argument("--label", help="lm-eval results: the model's name in tables (default: the checkpoint folder's name)")
    add_store(ingest)


def _lm_eval_results(args) -> int:
    from ccq_eval.run.lm_eval_results import read_results, results_files
    from ccq_eval.run.request import check_label
    from ccq_eval.store import Store

    check_label(args.label)

    files = [f for path in args.paths for f in results_files(Path(path))]
    read = [(f, *read_results(f, args.label)) for f in files]  # every file checked before the store is touched
    refused_any = False
    with Store(args.store) as target:
        for path, run, units, left_out, refused in read:
            units, held = held_elsewhere(target, run, units)
            refused = [*refused, *held]
            skipped_text = f"; left out {'; '.join(left_out)}" if left_out else ""
            refused_text = f"; refused {'; '.join(refused)}" if refused else ""
            refused_any |= bool(refused)
            if not units:
                print(f"{path}: nothing to add{skipped_text}{refused_text}")
                continue
            run_id, added, skipped = target.writes.add_finished_run(run, units)
            ended = f" (the run ended {run['status']}: kept so)" if run.get("status", "complete") != "complete" else ""
            print(f"{path}: " + (f"{added} units added as run {run_id} labelled {visible(repr(run['label']))}{ended}"
                                 if added else "nothing new")
                  + (f"; {skipped} already here" if skipped else "") + skipped_text + refused_text)
    if refused_any:
        print("ccq-eval: error: ingest refused results it cannot trust (named above); the rest was added", file=sys.stderr)
    return 1 if refused_any else 0


def known_task(suite: str, task: str) -> bool:
    """Whether this version's tables know the task (a suite's own or extra task, or any lm-eval task of a suite that
    names lm-eval's)."""
    from ccq_eval.suites import SUITES

    return suite in SUITES and (SUITES[suite].any_lm_eval_task or task in SUITES[suite].all_tasks)


def held_elsewhere(target, run: dict, units: list[tuple]) -> tuple[list[tuple], list[str]]:
    """The units that do not give a label a second result for a cell it holds (the tables would show only the later
    one), and why the others are refused. The same result again (its unit key) is left to the store to skip."""
    held = target.reads.label_cells(run["label"])
    kept, refused = [], []
    for unit in units:
        cell = (unit[0]["suite"], unit[0]["task"], unit[0]["context_length"])
        if cell in held and held[cell] != unit[0]["unit_key"]:
            refused.append(f"{cell[1]} at {cell[2]}: label {visible(repr(run['label']))} already holds a result for "
                           "it; ingest under another --label")
        else:
            kept.append(unit)
    return kept, refused


def check_labels(target_path: str, paths: list[str], sources: list) -> None:
    """Every run the merge would put under a label agrees with that label's runs on model, seeds and (shards of one
    job) command: refused in one line before the target is created or touched (store/merge_rules.py)."""
    from ccq_eval.store import Store
    from ccq_eval.store.merge_rules import conflict

    here = []
    if Path(target_path).exists():
        with Store(target_path, readonly=True) as target:
            here = target.reads.runs()
    runs = [(target_path, run) for run in here]
    runs += [(path, run) for path, source in zip(paths, sources) for run in source.reads.runs()]
    if (found := conflict(runs, new_from=len(here))) is not None:
        raise BadInput(f"ingest: {visible(found)}")


def _stores(args) -> int:
    from ccq_eval.store import Store

    sources = [Store(path, readonly=True) for path in args.paths]  # every source validated before any write
    for source in sources:
        source.connection.check_integrity()  # a damaged page fails here, before the target is created or touched
    check_labels(args.store, args.paths, sources)
    with Store(args.store) as target, target.connection.transaction():  # one transaction: a source that fails
        reports = [(path, *target.merging.ingest(source, known_task))  # mid-read merges nothing at all
                   for path, source in zip(args.paths, sources)]
    for source in sources:
        source.close()
    refused_any = False
    for path, added_runs, added_units, already_complete, refused in reports:
        print(f"{path}: {added_runs} runs, {added_units} units added"
              + (f"; {already_complete} complete units skipped (a result for their unit key is already here)"
                 if already_complete else "")
              + (f"; refused {len(refused)}: " + "; ".join(refused) if refused else ""))
        refused_any |= bool(refused)
    if refused_any:
        print("ccq-eval: error: ingest refused some runs or units (named above); the rest was merged", file=sys.stderr)
    return 1 if refused_any else 0


def handle(args) -> int:
    from ccq_eval.run.lm_eval_results import is_lm_eval_output

    kinds = {is_lm_eval_output(path) for path in args.paths}
    if kinds == {True}:
        return _lm_eval_results(args)
    if len(kinds) > 1:
        raise BadInput("ingest: stores and lm-eval results in one command; ingest each kind in its own command")
    if args.label:
        raise BadInput("--label: only for lm-eval results (a store's runs keep their own labels)")
    return _stores(args)
