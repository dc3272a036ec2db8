"""`ccq-eval rescore`: the stored predictions scored again by the current scorers, no model loaded (run/rescore.py)."""

from __future__ import annotations

import sys
from pathlib import Path

from ccq_eval.cli.common import add_store, say_orphans
from ccq_eval.errors import BadInput
from ccq_eval.text import visible

NAME = "rescore"


def add(subparsers) -> None:
    rescore = subparsers.add_parser(NAME, help="score the stored predictions again with the current scorers (no "
                                               "model); each result is a new unit that records the one it came from")
    rescore.add_argument("--suite", help="one suite (default: every suite whose units can be re-scored; perplexity "
                                         "and cost are measurements and cannot)")
    rescore.add_argument("--tasks", help="with --suite: a comma list of its tasks (default: all)")
    add_store(rescore)


def handle(args) -> int:
    from ccq_eval.run.rescore import rescore
    from ccq_eval.store import Store
    from ccq_eval.suites import SUITES

    if args.store.startswith("file:"):
        raise BadInput(f"--store {args.store!r}: a SQLite URI, not a path; pass the file's path (--store PATH)")
    if not Path(args.store).exists():
        raise BadInput(f"--store {args.store!r}: no such store; pass the --store that holds the results")
    if Path(args.store).is_file() and Path(args.store).stat().st_size == 0:
        raise BadInput(f"--store {args.store!r}: an empty file, not a store (rescore re-scores results, it makes no "
                       "store); pass the --store that holds the results")
    given = [*(["--suite", args.suite] if args.suite else []), *(["--tasks", args.tasks] if args.tasks else []),
             "--store", args.store]  # the rescore's run records its command line
    store = Store(args.store)
    say_orphans(store)
    done = rescore(store, SUITES, args.suite, args.tasks, given)
    for label, task, length, metric, before, after in done.written:
        change = "unchanged" if before == after else f"{before:.4g} -> {after:.4g}"
        print(f"{visible(label)} {task} at {length}: {metric} {after:.4g} ({change})")
    for suite, why in done.not_rescorable.items():
        print(f"{suite}: left as it is ({why})")
    for reason in done.left_out:
        print(f"left out: {visible(reason)}", file=sys.stderr)
    if done.interrupted is not None:
        from ccq_eval.run.runner import Terminated

        what = "terminated (SIGTERM)" if isinstance(done.interrupted, Terminated) else "interrupted"
        print(f"ccq-eval rescore: {what}; {len(done.written)} unit(s) were re-scored and written to {args.store} "
              "before it (their runs are marked interrupted). Rerun the same command to re-score the rest.",
              file=sys.stderr)
        return 143 if isinstance(done.interrupted, Terminated) else 130
    if done.continued:
        print(f"{done.continued} unit(s) re-scored by the interrupted rescore before: kept, not re-scored again")
    changed = sum(1 for *_, before, after in done.written if before != after)
    print(f"{len(done.written)} unit(s) re-scored ({changed} changed), {len(done.left_out)} left out -> {args.store}")
    return 1 if done.left_out else 0
