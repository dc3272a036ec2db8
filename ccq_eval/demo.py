"""`make demo`: the shipped tiny zoo through the real pipeline, offline, on a laptop CPU.

Every zoo model is evaluated on S-NIAH-1 and S-NIAH-2 at the training length (1K) up to 8x beyond it,
50 samples per cell, and on long-context perplexity over three shipped corpora (data/longppl.py
SHIPPED: the CC0 essays the zoo was trained on, which isolates length extrapolation, and Python's
reference manual and standard-library source, text the zoo has never seen). A
training-free CCQ sweep (lambda 0.1, 0.3, 1 with Sigma scaled by its trace; lambda 0 is the plain
model) runs on the plain GLA and GDN, on S-NIAH-1 and perplexity. Every number goes to one store; the tables (with 95%
intervals, and mean ± sd over the three GLA / CCQ-GLA seeds) and the curves are rendered from it.
The evaluations run as `ccq-eval run` processes, one per core, writing to the same store.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

DEFAULT_OUT = "results/demo"
LENGTHS = "1k,2k,4k,8k"  # the zoo's training length (1024 bytes) up to 8x beyond it
SNIAH_TASKS = "sniah_1,sniah_2"
SWEEP_SNIAH_TASKS = "sniah_1"
SNIAH_SAMPLES = 50
LONGPPL_TASKS = "essays,pydocs,pycode"
LONGPPL_SEQUENCES = 12  # documents per corpus with at least 8K bytes
SWEEP_LAMBDAS = (0.1, 0.3, 1.0)
SWEEP_MODELS = ("gla-tiny", "gdn-tiny")
GENERATION_BATCH = 25


@dataclass(frozen=True)
class Job:
    name: str
    args: tuple[str, ...]
    cost: float  # relative, to start the longest first


def plan(models: list[str], lengths: str, samples: int, sequences: int, lambdas: tuple[float, ...]) -> list[Job]:
    from ccq_eval.zoo_build import ZOO

    jobs = []
    evaluands = [(name, ()) for name in models]
    evaluands += [(name, ("--ccq-lambda", f"{lam:g}")) for name in SWEEP_MODELS if name in models for lam in lambdas]
    for name, extra in evaluands:
        tag = name + (f"+ccq{extra[1]}" if extra else "")
        common = ("--model", f"zoo:{name}", "--lengths", lengths, *extra)
        tasks = SWEEP_SNIAH_TASKS if extra else SNIAH_TASKS  # the sweep: S-NIAH-1 only (the time budget)
        jobs.append(Job(f"{tag} sniah", ("--suite", "sniah", "--tasks", tasks, "--samples", str(samples),
                                         "--batch-size", str(GENERATION_BATCH), *common), tasks.count(",") + 1.0))
        jobs.append(Job(f"{tag} longppl", ("--suite", "longppl", "--tasks", LONGPPL_TASKS,
                                           "--samples", str(sequences), *common), 0.3))
    return sorted(jobs, key=lambda j: -j.cost)


def run_jobs(jobs: list[Job], store: Path, logs: Path, workers: int) -> list[str]:
    """Each job a `ccq-eval run` subprocess with its share of the cores; returns the failures."""
    logs.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 1) // workers)),
               TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore")
    started, failures = time.time(), []

    def one(job: Job) -> None:
        log = logs / (job.name.replace(" ", "_").replace("+", "_") + ".log")
        t0 = time.time()
        with open(log, "w") as handle:
            rc = subprocess.call([sys.executable, "-m", "ccq_eval", "run", *job.args, "--store", str(store)],
                                 stdout=handle, stderr=subprocess.STDOUT, env=env)
        status = "ok" if rc == 0 else f"FAILED (exit {rc}; see {log})"
        print(f"  [{(time.time() - started) / 60:5.1f} min] {job.name:<28} {time.time() - t0:6.0f} s  {status}",
              flush=True)
        if rc != 0:
            failures.append(job.name)

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, jobs))
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ccq_eval.demo", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=DEFAULT_OUT, help=f"store, tables, figures and logs (default {DEFAULT_OUT})")
    parser.add_argument("--models", help="comma list of zoo names (default: the whole zoo)")
    parser.add_argument("--lengths", default=LENGTHS)
    parser.add_argument("--samples", type=int, default=SNIAH_SAMPLES, help="S-NIAH samples per task and length")
    parser.add_argument("--sequences", type=int, default=LONGPPL_SEQUENCES, help="longppl documents per corpus")
    parser.add_argument("--lambdas", default=",".join(f"{x:g}" for x in SWEEP_LAMBDAS),
                        help="training-free CCQ sweep on gla-tiny and gdn-tiny ('' for none)")
    parser.add_argument("--workers", type=int, default=max(1, min(2, os.cpu_count() or 1)))
    args = parser.parse_args(argv)

    from ccq_eval import cli
    from ccq_eval.models.loading import zoo_dir
    from ccq_eval.zoo_build import ZOO

    models = args.models.split(",") if args.models else list(ZOO)
    missing = [m for m in models if m not in ZOO or not (zoo_dir() / m / "config.json").exists()]
    try:
        lambdas = tuple(float(x) for x in args.lambdas.split(",") if x.strip())
    except ValueError:
        print(f"demo: error: --lambdas {args.lambdas!r}: not a comma list of numbers", file=sys.stderr)
        return 2
    if missing:
        print(f"demo: error: zoo model(s) not found in {zoo_dir()}: {', '.join(missing)}; available: "
              f"{', '.join(ZOO)}; rebuild with `ccq-eval zoo build`", file=sys.stderr)
        return 2
    out = Path(args.out)
    store = out / "ccq.db"
    jobs = plan(models, args.lengths, args.samples, args.sequences, lambdas)
    print(f"ccq-eval demo: {len(jobs)} evaluations of {len(models)} zoo models on {args.workers} worker(s); "
          f"store {store} (finished units are kept: rerunning resumes)", flush=True)
    started = time.time()
    failures = run_jobs(jobs, store, out / "logs", args.workers)
    if failures:
        print(f"demo: error: {len(failures)} evaluation(s) failed: {', '.join(failures)}", file=sys.stderr)
        return 1
    print(f"evaluations done in {(time.time() - started) / 60:.1f} min\n", flush=True)
    for table in ("sniah", "sniah-partial", "longppl", "seeds"):
        if cli.main(["tables", "--table", table, "--ci", "--store", str(store), "--out", str(out / "tables")]) != 0:
            return 1
    if cli.main(["curves", "--store", str(store), "--out", str(out / "figures")]) != 0:
        return 1
    print(f"\nstore: {store}\ntables (csv, tex, md): {out / 'tables'}\nfigures (png, pdf): {out / 'figures'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
