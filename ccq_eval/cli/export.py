"""`ccq-eval export RUN --format lm-eval`: one run written in another tool's results layout."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import add_store
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "export"


def add(subparsers) -> None:
    export = subparsers.add_parser(NAME, help="write a run in another tool's results layout")
    export.add_argument("run_id", metavar="RUN_ID", help="the run (see ccq-eval runs)")
    export.add_argument("--format", required=True, choices=("lm-eval",), help="lm-eval: results_<date>.json and "
                        "samples_<task>_<date>.jsonl, as lm-eval --output_path --log_samples writes them")
    export.add_argument("--out", default="results/lm-eval", help="folder (default results/lm-eval)")
    add_store(export)


def handle(args) -> int:
    from ccq_eval.interchange.lm_eval_export import export_run
    from ccq_eval.store import Store

    if not Path(args.store).exists():
        raise BadInput(f"--store {args.store!r}: no such store (pass the --store that holds run {args.run_id})")
    out = check_output_folder(Path(args.out), "--out", [])
    from ccq_eval.suites import SUITES

    own = frozenset(name for name, suite in SUITES.items() if suite.any_lm_eval_task)
    for path in export_run(Store(args.store, readonly=True), args.run_id, out, own_tasks=own):
        print(f"written: {path}")
    return 0
