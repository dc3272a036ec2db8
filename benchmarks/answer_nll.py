"""S-NIAH's answer NLL two ways, side by side in one run on a shipped zoo model: scored from the
prefill that starts decoding (ccq-eval's default) against lm-eval's loglikelihood (a second forward
over every prompt, the reference). Same units, same data; medians of the unit wall times.

    python benchmarks/answer_nll.py [--model zoo:gla-tiny] [--lengths 2k,4k] [--samples 25] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")


def one_run(model: str, lengths: str, samples: int, fused: bool, folder: Path) -> tuple[float, list[float]]:
    from ccq_eval.suites.sniah import driver as suite_sniah
    from ccq_eval.cli import main

    suite_sniah.FUSED_ANSWER_NLL = fused
    store = folder / f"{fused}-{time.monotonic_ns()}.db"
    start = time.perf_counter()
    assert main(["--model", model, "--suite", "sniah", "--tasks", "1", "--lengths", lengths, "--samples", str(samples),
                 "--batch-size", str(samples), "--store", str(store), "--device", "cpu"]) == 0
    elapsed = time.perf_counter() - start
    nlls = [json.loads(f)["answer_nll"] for (f,) in sqlite3.connect(store).execute(
        "SELECT s.fields FROM samples s JOIN units u ON u.id = s.unit_id ORDER BY u.context_length, s.idx")]
    return elapsed, nlls


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="zoo:gla-tiny")
    parser.add_argument("--lengths", default="2k,4k")
    parser.add_argument("--samples", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    times = {True: [], False: []}
    with tempfile.TemporaryDirectory() as tmp:
        one_run(args.model, args.lengths, args.samples, True, Path(tmp))  # warm: data built, imports done
        for _ in range(args.repeats):
            for fused in (True, False):
                elapsed, nlls = one_run(args.model, args.lengths, args.samples, fused, Path(tmp))
                times[fused].append(elapsed)
                if fused:
                    fused_nlls = nlls
                else:
                    diff = max(abs(a - b) for a, b in zip(fused_nlls, nlls))
    fast, slow = statistics.median(times[True]), statistics.median(times[False])
    print(f"{args.model} S-NIAH-1 {args.lengths} x {args.samples} samples (medians of {args.repeats}): "
          f"prefill-scored {fast:.1f} s, loglikelihood {slow:.1f} s, ratio {slow / fast:.2f}x; "
          f"max |NLL difference| {diff:.1e}")


if __name__ == "__main__":
    main()
