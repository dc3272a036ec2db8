"""`make demo`: the shipped tiny zoo through the real pipeline, offline, on a laptop CPU.

Every zoo model is evaluated on S-NIAH-1 and S-NIAH-2 at the training length (1K) up to 4x beyond it,
25 samples per cell, on RULER's five multi-needle tasks at the training length, on RULER's variable tracking,
common / frequent words extraction at 2K and SQuAD QA at 4K (10 samples a task; QA over shipped small documents), on
in-context TriviaQA / NQ / DROP at 1K (shipped small records), on BABILong's qa1-qa2 at 1K (the shipped bAbI
stories among the essays' sentences), and on long-context perplexity
over four shipped corpora (the longppl
suite's SHIPPED: the CC0 essays the zoo was trained on, which isolates length extrapolation; more essays
in the same voice that it never saw, which measures generalisation; Python's reference manual and
standard-library source, text of another kind it has never seen). A
training-free CCQ sweep (lambda 0.1, 0.3, 1 with Sigma scaled by its trace; lambda 0 is the plain
model) runs on the plain GLA and GDN, on perplexity and on S-NIAH-1 at 1K and 4K. Every number goes to one store; the tables (with 95%
intervals, mean ± sd over the GLA / CCQ-GLA seeds, and every CCQ model against its backbone with paired
tests) and the curves are rendered from it.
The evaluations run as `ccq-eval run` calls in one worker process per core (their jobs split longest
first), writing to the same store.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.base import parse_lengths

DEFAULT_OUT = "results/demo"
# the zoo's training length (1024 bytes) up to 4x beyond it, 25 samples a cell: the demo's 10-minute budget
# on a 2-core CPU (1K-8K with 50 samples took ~30 minutes; --lengths 1k,2k,4k,8k --samples 50 restores it)
LENGTHS = "1k,2k,4k"
SNIAH_TASKS = "sniah_1,sniah_2"
SWEEP_SNIAH_TASKS = "sniah_1"
SWEEP_SNIAH_LENGTHS = "1k,4k"  # the training length and 4x
SNIAH_SAMPLES = 25
MULTI_NIAH_LENGTH = "1k"  # RULER's multi-needle tasks at the training length only (the zoo never saw four needles)
# RULER's VT, CWE and FWE: 2K, the shortest length all three fit with the zoo's byte tokenizer (VT's worked example and
# CWE's list alone outgrow 1K), 10 samples a task: about 15 s a model here
RULER_LENGTH = "2k"
RULER_SAMPLES = 10
RULER_TASKS = "ruler_vt,ruler_cwe,ruler_fwe"
# QA over the shipped small SQuAD documents at 4K: RULER's QA never uses fewer than ten documents a question, and
# ten outgrow 2K bytes (HotpotQA's ten outgrow 4K too, so QA-2 is left out)
RULER_QA_TASKS, RULER_QA_LENGTH = "ruler_qa_squad", "4k"
RECALL_LENGTH = "1k"  # in-context TriviaQA / NQ / DROP on the shipped small records (6, 5, 6), at the zoo's 1K
# BABILong's qa1 and qa2 on the shipped bAbI stories (20 and 5 questions) at the zoo's 1K: in the reference's bare
# variant (the context and question alone), as the full prompt of qa1 needs 1192 of the byte tokenizer's tokens
BABILONG_TASKS, BABILONG_LENGTH, BABILONG_PROMPT = "qa1,qa2", "1k", "bare"
LONGPPL_TASKS = "essays,essays_heldout,pydocs,pycode"
LONGPPL_SEQUENCES = 12  # documents per corpus with at least L_max bytes
SWEEP_LAMBDAS = (0.1, 0.3, 1.0)
SWEEP_MODELS = ("gla-tiny", "gdn-tiny")
# Measured here (make demo, 1K-4K, 25 samples): the Transformer's S-NIAH job 219 s, gla-tiny's 82 s; its
# attention reads the whole prompt at every decoding step, the recurrent models a fixed-size state
TRANSFORMER_DECODING_COST = 2.7
GENERATION_BATCH = 25  # 50 was slower at 8K on this CPU (memory traffic); prefill dominates either way


@dataclass(frozen=True)
class Job:
    name: str
    args: tuple[str, ...]
    cost: float  # relative, to start the longest first


def sweep_lengths(lengths: str) -> str:
    """The sweep's S-NIAH lengths: SWEEP_SNIAH_LENGTHS when the run covers them, else the run's shortest."""
    run, wanted = parse_lengths(lengths), parse_lengths(SWEEP_SNIAH_LENGTHS)
    chosen = [L for L in wanted if L in run] or [run[0]]
    return ",".join(str(L) for L in chosen)


def training_length(lengths: str) -> str:
    """MULTI_NIAH_LENGTH when the run covers it, else the run's shortest length."""
    run, (wanted,) = parse_lengths(lengths), parse_lengths(MULTI_NIAH_LENGTH)
    return str(wanted if wanted in run else run[0])


def plan(models: list[str], lengths: str, samples: int, sequences: int, lambdas: tuple[float, ...]) -> list[Job]:
    from ccq_eval.zoo_build import ZOO

    jobs = []
    evaluands = [(name, ()) for name in models]
    evaluands += [(name, ("--ccq-lambda", f"{lam:g}")) for name in SWEEP_MODELS if name in models for lam in lambdas]
    for name, extra in evaluands:
        tag = name + (f"+ccq{extra[1]}" if extra else "")
        model = ("--model", f"zoo:{name}", *extra)
        # the sweep: S-NIAH-1 at two lengths (the time budget); perplexity at every length
        tasks, sniah_lengths = (SWEEP_SNIAH_TASKS, sweep_lengths(lengths)) if extra else (SNIAH_TASKS, lengths)
        cost = (tasks.count(",") + 1) * sum(parse_lengths(sniah_lengths)) / sum(parse_lengths(lengths))
        if ZOO[name].family == "transformer":
            cost *= TRANSFORMER_DECODING_COST
        jobs.append(Job(f"{tag} sniah", ("--suite", "sniah", "--tasks", tasks, "--lengths", sniah_lengths,
                                         "--samples", str(samples), "--batch-size", str(GENERATION_BATCH), *model),
                        cost))
        jobs.append(Job(f"{tag} longppl", ("--suite", "longppl", "--tasks", LONGPPL_TASKS, "--lengths", lengths,
                                           "--samples", str(sequences), *model), 0.35))
        if not extra:  # the five multi-needle tasks, for the models themselves (not the sweep)
            multi_length = training_length(lengths)
            jobs.append(Job(f"{tag} multi_niah", ("--suite", "multi_niah", "--lengths", multi_length, "--samples",
                                                  str(samples), "--batch-size", str(GENERATION_BATCH), *model),
                            5 * sum(parse_lengths(multi_length)) / sum(parse_lengths(lengths))
                            * (TRANSFORMER_DECODING_COST if ZOO[name].family == "transformer" else 1)))
            for job, tasks, length in (("ruler", RULER_TASKS, RULER_LENGTH), ("ruler-qa", RULER_QA_TASKS,
                                                                              RULER_QA_LENGTH)):
                jobs.append(Job(f"{tag} {job}", ("--suite", "ruler", "--tasks", tasks, "--lengths", length,
                                                 "--samples", str(RULER_SAMPLES), "--batch-size",
                                                 str(GENERATION_BATCH), "--data-dir", str(SHIPPED_RECORDS), *model),
                                (tasks.count(",") + 1) * sum(parse_lengths(length)) * RULER_SAMPLES / samples
                                / sum(parse_lengths(lengths))))
            jobs.append(Job(f"{tag} recall", ("--suite", "recall", "--lengths", RECALL_LENGTH, "--batch-size",
                                              str(GENERATION_BATCH), "--data-dir", str(SHIPPED_RECORDS), *model),
                            0.1))
            jobs.append(Job(f"{tag} babilong", ("--suite", "babilong", "--tasks", BABILONG_TASKS, "--lengths",
                                                BABILONG_LENGTH, "--babilong-prompt", BABILONG_PROMPT, "--samples",
                                                str(samples), "--batch-size", str(GENERATION_BATCH), *model),
                            0.1 * (TRANSFORMER_DECODING_COST if ZOO[name].family == "transformer" else 1)))
    return sorted(jobs, key=lambda j: -j.cost)


def partition(jobs: list[Job], workers: int) -> list[list[Job]]:
    """Longest job first onto the least-loaded worker (LPT): the workers finish close together."""
    shares, loads = [[] for _ in range(workers)], [0.0] * workers
    for job in sorted(jobs, key=lambda j: -j.cost):
        least = loads.index(min(loads))
        shares[least].append(job)
        loads[least] += job.cost
    return shares


def run_share(jobs: list[dict], store: str, logs: str) -> int:
    """One worker process: its jobs in turn through `ccq-eval run` in-process (one interpreter start,
    not one per job), each job's output (and its progress bars) to its own log, start and end reported to
    the events file the parent draws its progress line from; returns how many failed."""
    import contextlib
    import logging

    from ccq_eval import cli
    from ccq_eval.demo_console import report

    events = Path(logs) / EVENTS
    failed = 0
    for job in jobs:
        start = time.time()
        log = Path(logs) / (job["name"].replace(" ", "_").replace("+", "_") + ".log")
        report(events, job["name"], "start")
        with open(log, "w") as handle, contextlib.redirect_stdout(handle), contextlib.redirect_stderr(handle):
            to_log = logging.StreamHandler(handle)  # library loggers made their handlers before the redirect
            logging.getLogger().addHandler(to_log)
            try:
                rc = cli.main(["run", *job["args"], "--store", store])
            except Exception as exc:  # noqa: BLE001 - reported, and the next job still runs
                print(f"{type(exc).__name__}: {exc}")
                rc = 1
            finally:
                logging.getLogger().removeHandler(to_log)
        failed += rc != 0
        report(events, job["name"], "done", status="ok" if rc == 0 else f"exit {rc}", seconds=time.time() - start,
               log=str(log))
        if rc in (130, 143):  # Ctrl-C or SIGTERM: the worker stops, it does not start its next job
            break
    return failed


EVENTS = "events.jsonl"


def run_jobs(jobs: list[Job], store: Path, logs: Path, workers: int) -> int:
    """The jobs split over `workers` processes with a share of the cores each, one progress line drawn
    meanwhile; returns the failures."""
    from ccq_eval.demo_console import watch

    logs.mkdir(parents=True, exist_ok=True)
    (logs / EVENTS).write_text("")
    # the workers' library notices (transformers' "longer than the maximum length", lm-eval's chatter) say
    # nothing to a newcomer: errors only, and those go to each job's log
    env = dict(os.environ, OMP_NUM_THREADS=str(max(1, (os.cpu_count() or 1) // workers)),
               TOKENIZERS_PARALLELISM="false", PYTHONWARNINGS="ignore", TRANSFORMERS_VERBOSITY="error",
               TRANSFORMERS_NO_ADVISORY_WARNINGS="1")
    procs, started = [], time.time()
    for share in partition(jobs, workers):
        spec = json.dumps({"jobs": [{"name": j.name, "args": list(j.args)} for j in share],
                           "store": str(store), "logs": str(logs)})
        procs.append(subprocess.Popen([sys.executable, "-m", "ccq_eval.demo", "--worker", spec], env=env,
                                      stdout=subprocess.DEVNULL))
    try:
        watch(procs, logs / EVENTS, {j.name: j.cost for j in jobs}, started)
    except KeyboardInterrupt:  # the workers got the same Ctrl-C; SIGTERM for any that started a job since
        for proc in procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in procs:
            proc.wait()
        raise
    return sum(proc.wait() for proc in procs)


def job_times(logs: Path) -> list[tuple[str, float, str]]:
    from ccq_eval.demo_console import read_events

    return [(e["job"], e["seconds"], e["status"]) for e in read_events(logs / EVENTS) if e["event"] == "done"]


def _parser() -> argparse.ArgumentParser:
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
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: one worker's share, as JSON
    return parser


def _models_and_lambdas(args) -> tuple[list[str], tuple[float, ...]] | None:
    """The zoo models and CCQ lambdas asked for; None after one line on stderr for a mistake."""
    from ccq_eval.models.loading import zoo_dir
    from ccq_eval.zoo_build import ZOO

    models = args.models.split(",") if args.models else list(ZOO)
    missing = [m for m in models if m not in ZOO or not (zoo_dir() / m / "config.json").exists()]
    try:
        lambdas = tuple(float(x) for x in args.lambdas.split(",") if x.strip())
    except ValueError:
        print(f"demo: error: --lambdas {args.lambdas!r}: not a comma list of numbers", file=sys.stderr)
        return None
    if missing:
        print(f"demo: error: zoo model(s) not found in {zoo_dir()}: {', '.join(missing)}; available: "
              f"{', '.join(ZOO)}; rebuild with `ccq-eval zoo build`", file=sys.stderr)
        return None
    return models, lambdas


def _report_times(out: Path, failures: int) -> bool:
    """The per-job breakdown (logs/times.txt, longest first); False, with the failed jobs named, on failures."""
    times = job_times(out / "logs")
    with open(out / "logs" / "times.txt", "w") as handle:
        for name, seconds, status in sorted(times, key=lambda t: -t[1]):
            handle.write(f"{name:<32} {seconds:7.0f} s  {status}\n")
    if not failures:
        return True
    for name, _, status in times:
        if status != "ok":
            print(f"  failed: {name} ({status}; see {out / 'logs'})", file=sys.stderr)
    print(f"demo: error: {failures} evaluation(s) failed (logs in {out / 'logs'})", file=sys.stderr)
    return False


def _render(store: Path, out: Path) -> bool:
    """The demo's tables (with intervals), every figure and the HTML report, through the CLI; their chatter to
    logs/render.log."""
    import contextlib

    from ccq_eval import cli

    with open(out / "logs" / "render.log", "w") as handle, contextlib.redirect_stdout(handle):
        # every table the store has numbers for (the others are skipped by name)
        if cli.main(["tables", "--table", "all", "--ci", "--store", str(store), "--out", str(out / "tables")]) != 0:
            return False
        if cli.main(["curves", "--store", str(store), "--out", str(out / "figures")]) != 0:
            return False
        return cli.main(["view", "--store", str(store), "--out", str(out / "report.html")]) == 0


def main(argv: list[str] | None = None) -> int:
    import warnings

    args = _parser().parse_args(argv)
    if args.worker:
        warnings.filterwarnings("ignore")
        share = json.loads(args.worker)
        return min(run_share(share["jobs"], share["store"], share["logs"]), 100)
    warnings.filterwarnings("ignore", message="Triton is not supported")  # fla on a CPU machine: expected here
    if (asked := _models_and_lambdas(args)) is None:
        return 2
    models, lambdas = asked
    out = Path(args.out)
    store = out / "ccq.db"
    jobs = plan(models, args.lengths, args.samples, args.sequences, lambdas)
    print(f"ccq-eval demo: {len(jobs)} evaluations of {len(models)} zoo models on {args.workers} worker(s); "
          f"store {store} (finished units are kept: rerunning resumes)", flush=True)
    started = time.time()
    try:
        failures = run_jobs(jobs, store, out / "logs", args.workers)
    except KeyboardInterrupt:
        print(f"\ndemo: interrupted; finished units are kept in {store}: rerun `make demo` to resume", file=sys.stderr)
        return 130
    if not _report_times(out, failures):
        return 1
    print(f"evaluations done in {(time.time() - started) / 60:.1f} min (per job: {out / 'logs' / 'times.txt'})",
          flush=True)
    if not _render(store, out):
        return 1
    from ccq_eval.demo_console import summary

    print("\n" + summary(store, parse_lengths(args.lengths), out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
