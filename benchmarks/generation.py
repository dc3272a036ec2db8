"""The generation engine's batching on this machine: S-NIAH on a zoo model at 1K through the real CLI at batch 1 and
batch N, alternating, each run into a store of its own; the units' own time (started to finished, as stored) summed
per run, medians over --repeats; and the predictions compared sample by sample (a sample that differs is named).
The target: batch 8 at most two thirds of batch 1's time, with the same predictions.

    python benchmarks/generation.py [--model zoo:gla-tiny] [--batch 8] [--samples 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import sqlite3
import statistics
import sys
import tempfile
import warnings
from datetime import datetime
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def run(model: str, tasks: str, samples: int, batch: int, store: Path) -> tuple[float, dict]:
    """(the units' own seconds, (task, index) -> prediction) of one run."""
    from ccq_eval.cli import main

    code = main(["--model", model, "--suite", "sniah", "--tasks", tasks, "--lengths", "1024", "--samples",
                 str(samples), "--batch-size", str(batch), "--store", str(store), "--device", "cpu"])
    if code != 0:
        raise SystemExit(f"the run at batch {batch} failed (exit {code})")
    db = sqlite3.connect(store)
    seconds = sum((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
                  for start, end in db.execute("SELECT started, finished FROM units WHERE status = 'complete'"))
    predictions = {(task, idx): prediction for task, idx, prediction in db.execute(
        "SELECT u.task, s.idx, s.prediction FROM samples s JOIN units u ON u.id = s.unit_id")}
    return seconds, predictions


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="zoo:gla-tiny")
    parser.add_argument("--tasks", default="sniah_1,sniah_2,sniah_3")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--samples", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    times: dict[int, list[float]] = {1: [], args.batch: []}
    predictions: dict[int, dict] = {}
    with tempfile.TemporaryDirectory() as folder:
        run(args.model, args.tasks, args.samples, 1, Path(folder) / "warm.db")  # data built and cached, untimed
        for repeat in range(args.repeats):
            for batch in times:
                seconds, predictions[batch] = run(args.model, args.tasks, args.samples, batch,
                                                  Path(folder) / f"b{batch}-{repeat}.db")
                times[batch].append(seconds)
    one, many = statistics.median(times[1]), statistics.median(times[args.batch])
    differ = sorted(key for key in predictions[1] if predictions[1][key] != predictions[args.batch].get(key))
    print(f"{args.model}, S-NIAH ({args.tasks}) at 1K, {args.samples} samples a task; units' own time, medians of "
          f"{args.repeats}")
    print(f"  batch 1: {one:.1f} s; batch {args.batch}: {many:.1f} s = {many / one:.2f} of batch 1 "
          f"(target at most 0.67)")
    print(f"  predictions: {len(predictions[1]) - len(differ)}/{len(predictions[1])} equal"
          + (f"; differ: {', '.join(f'{t}#{i}' for t, i in differ)}" if differ else ""))
    return 0 if many / one <= 2 / 3 and not differ else 1


if __name__ == "__main__":
    sys.exit(main())
