"""Plans a run's units (suite x task x context length), skips those already complete in the store,
has each suite's driver evaluate the rest, and writes each unit in one transaction when it ends.

The runner knows suites only through the interface in suites/base.py and the registry. Everything
that can be wrong with the input (suite, flags, data, store, checkpoint, a length too small for the
prompt) is checked before the first write: bad input leaves the store untouched.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Callable

from ccq_eval.data.cache import check_cache_root
from ccq_eval import machine
from ccq_eval.generation.generator import Generator
from ccq_eval.generation.ranks import launch
from ccq_eval.lm.adapter import ModelAdapter
from ccq_eval.run.evaluand import Evaluand, load_evaluand
from ccq_eval.run.raw_output import check_raw_folder, save_raw
from ccq_eval.run.request import RunRequest, default_label, parse_shard, select_shard
from ccq_eval.text import visible
from ccq_eval.run.units import metric_row, unit_key
from ccq_eval.store import Store, StoreWriteError, now
from ccq_eval.suites import ALL_ORDER, get_suite
from ccq_eval.suites.base import Suite, SuiteError, parse_lengths, parse_tasks
from ccq_eval.suites.driver import DriverInputs
from ccq_eval.suites.outcomes import Unit, UnitOutcome


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


class Terminated(KeyboardInterrupt):
    """SIGTERM (what SLURM and most schedulers send at a time limit): handled like Ctrl-C."""


class Interrupts:
    """The signals received while a run's units execute. A KeyboardInterrupt raised where a library
    swallows it (inside a __del__ or a callback, "Exception ignored in ...") still ends the run: the
    runner checks ``raise_if_received`` after every unit."""

    def __init__(self):
        self.received: int | None = None

    def handler(self, signum, frame):
        self.received = signum
        self.raise_if_received()

    def raise_if_received(self) -> None:
        if self.received == signal.SIGTERM:
            raise Terminated()
        if self.received is not None:
            raise KeyboardInterrupt()


@contextmanager
def interrupts():
    """SIGINT raises KeyboardInterrupt and SIGTERM raises Terminated for the duration, each recorded, also
    where SIGINT was ignored when the process started (a background job). Main thread only, where
    signals are delivered; elsewhere signals are left alone."""
    record = Interrupts()
    try:
        previous = {sig: signal.signal(sig, record.handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    except ValueError:  # not the main thread
        yield record
        return
    try:
        yield record
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def untrusted_number(outcome: UnitOutcome) -> str | None:
    """A metric that is NaN or infinite cannot be trusted: the reason its unit fails, or None."""
    for m in outcome.metrics:
        for field in ("value", "stderr"):
            number = getattr(m, field)
            if number is not None and not math.isfinite(number):
                return f"NonFiniteMetric: {m.name} {field} is {number}; the number cannot be trusted"
    return None


def fewer_than_asked(scored: int | None, asked: int | None) -> str | None:
    """Said beside a unit that scored fewer samples than --samples asked for (its data holds no more)."""
    if isinstance(scored, int) and isinstance(asked, int) and scored < asked:
        return f"{scored:,} of the {asked:,} samples asked for: the data holds no more"
    return None


# what a complete unit's settings may say about its output (weak but valid): shown beside it in the summary
WARNINGS = ("warning", "depth_warning", "positions_warning")


def batch_size_of(provenance: dict, request) -> int:
    """The batch size the evaluand resolved (``auto``), or the request's (evaluands made elsewhere: tests)."""
    size = provenance.get("batch_size", request.batch_size)
    return 1 if size in ("auto", None) else size


def driver_inputs(request: RunRequest, suite: Suite) -> DriverInputs:
    """The suite's part of the request, parsed once: its tasks, lengths, samples and typed options."""
    tasks = parse_tasks(suite, request.tasks)
    if request.lengths is not None:
        parsed = parse_lengths(request.lengths, zero=bool(suite.zero_length))  # checked even where ignored
    lengths = suite.default_lengths if suite.fixed_lengths or request.lengths is None else parsed
    samples = request.samples if request.samples is not None else suite.default_samples
    if samples is not None and samples <= 0:
        raise SuiteError(f"--samples {samples}: must be a positive count")
    return DriverInputs(suite, tasks, lengths, samples, suite.parse_options(request.options), request.seed,
                        request.data_dir)


class SuitePlan:
    """One suite of a run: what its driver was given, and the driver."""

    def __init__(self, request: RunRequest, suite: Suite):
        self.suite = suite
        self.inputs = driver_inputs(request, suite)
        self.tasks, self.lengths = self.inputs.tasks, self.inputs.lengths
        self.driver = suite.driver(self.inputs)


class Runner:
    """Runs one RunRequest: every unit of its suites. ``evaluand_loader`` is injectable (any model whose generator
    implements generation.generator.Generator and whose lm-eval LM implements lm.adapter.ModelAdapter)."""

    def __init__(self, request: RunRequest, evaluand_loader: Callable[[RunRequest, int], Evaluand] = load_evaluand,
                 out=print):
        self.request = request
        self.load = evaluand_loader
        self.out = out
        self.compilations = []  # fla's kernels compiled before the first unit (on CUDA): run/kernel_warmup.py

    # --- planning (no writes) ---------------------------------------------------------------------

    def prepare(self):
        r = self.request
        # before any work: a label the tables cannot show is refused, --label's or the model folder's name
        self.label = default_label(r)
        launch()  # the launcher's environment (WORLD_SIZE, RANK, ...), checked before anything loads
        check_cache_root()  # where data are frozen: a bad location is bad input before any work
        if r.suite == "all":
            if r.tasks or r.lengths:
                raise SuiteError("--suite all runs every suite with its default tasks and lengths; "
                                 "drop --tasks / --lengths, or run one suite")
            self.plans = [SuitePlan(r, get_suite(name)) for name in ALL_ORDER]
        else:
            self.plans = [SuitePlan(r, get_suite(r.suite))]
        for plan in self.plans:
            plan.driver.check_inputs()  # data present and well-formed, before the model is loaded
        self.shard = shard = parse_shard(r.shard)  # a Slurm shard outside an array: bad input before the model loads
        threads, self.threads_chosen_by = machine.choose_threads(r.threads)
        import torch  # here, not at the top: planning and --help load no heavy library

        torch.set_num_threads(threads)
        from ccq_eval.ops import trust

        trust.set_mode(r.kernels)
        self.evaluand = self.load(r, max(plan.driver.max_length() for plan in self.plans))
        if not isinstance(self.evaluand.generator, Generator):
            raise TypeError(f"{type(self.evaluand.generator).__name__} does not implement generation.generator.Generator")
        if not isinstance(self.evaluand.lm, ModelAdapter):
            raise TypeError(f"{type(self.evaluand.lm).__name__} does not implement lm.adapter.ModelAdapter")
        self._check_positions()
        for plan in self.plans:
            plan.driver.check_with_tokenizer(self.evaluand.tokenizer)  # lengths the prompts or documents cannot fill
        check_raw_folder(r.store)
        planned = [unit for plan in self.plans for unit in self.units_of(plan)]
        self.units = select_shard(planned, shard)
        if shard is not None and not self.units:
            groups = len({(u.suite, u.task) for u in planned})
            named = r.shard if r.shard not in ("slurm", "auto") else f"{r.shard} ({shard[0]}/{shard[1]})"
            raise SuiteError(f"--shard {named}: this shard holds no units (the run has "
                             f"{groups} task group{'s' if groups != 1 else ''}, split whole across shards); use at "
                             f"most {groups} shards")
        # opened last: bad input above never creates or touches a store; a dry run creates none
        self.store = None if r.dry_run and not Path(r.store).exists() else Store(
            r.store, readonly=r.dry_run)
        return self

    def _check_positions(self) -> None:
        """A model with a learned position table cannot read past it: longer contexts are refused up front."""
        table = self.evaluand.provenance.get("learned_positions")
        if not table:
            return
        name, positions = table
        for plan in self.plans:
            if (needed := plan.driver.max_length()) > positions:
                what = (f"--lengths up to {positions}" if not plan.suite.fixed_lengths
                        else f"another suite (its window is fixed at {needed})")
                raise SuiteError(f"model {self.request.model!r}: its learned position table ({name}) has {positions} "
                                 f"positions, and the {plan.suite.name} suite needs {needed} tokens; pass {what}")

    def units_of(self, plan: SuitePlan) -> list[Unit]:
        prov = self.evaluand.provenance
        units = []
        for task in plan.tasks:
            for length in plan.lengths:
                settings, data_key = plan.driver.unit_settings(task, length, self.evaluand)
                settings = {"samples": plan.inputs.samples, "seed": self.request.seed, "dtype": prov["dtype"],
                            "batch_size": batch_size_of(prov, self.request), **settings}
                key = unit_key(prov, plan.suite, task, length, settings, data_key)
                units.append(Unit(plan.suite.name, task, length, settings, data_key, key))
        return units

    # --- running ------------------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return self.evaluand.ranks.rank

    def _task_groups(self, todo: list[Unit]):
        """(plan, units of one task) in planning order: a driver runs one task's units together."""
        for plan in self.plans:
            for task in plan.tasks:
                task_units = [u for u in todo if u.suite == plan.suite.name and u.task == task]
                if task_units:
                    yield plan, task_units

    def run(self) -> int:
        """Every planned unit this label does not hold yet: a key another label's run computed is reused (its
        result stored under this label too, nothing recomputed), the rest evaluated. --force recomputes them all."""
        force = self.request.force
        held = self.store.reads.complete_unit_keys(self.label) if self.store else set()
        computed = self.store.reads.complete_unit_keys() if self.store and not force else set()
        todo = [u for u in self.units if force or u.unit_key not in held]
        to_reuse = [u for u in todo if u.unit_key in computed]
        to_compute = [u for u in todo if u.unit_key not in computed]
        if to_compute and not self.request.dry_run:
            self._warm_up()  # fla's kernels compiled before the first unit, said, and kept out of every unit's time
        if self.rank != 0:  # data-parallel helper: evaluates its share of every unit rank 0 computes; rank 0 writes
            for plan, task_units in self._task_groups(to_compute):
                for _ in plan.driver.run_units(task_units, self.evaluand):
                    pass
            return 0
        if self.request.dry_run:
            return self._dry_run(todo, to_reuse)
        if not todo:
            self.out(f"all {len(self.units)} units already complete under label {visible(repr(self.label))} in "
                     f"{self.request.store} (--force reruns them)")
            return 0
        run_id = self.store.writes.begin_run(self._run_record())
        results: list = []
        try:
            with interrupts() as received:
                results += [(unit, self._reuse(run_id, unit, now())) for unit in to_reuse]
                self._compute(run_id, to_compute, results, received)
        except KeyboardInterrupt as exc:
            return self._interrupted(run_id, exc)
        except StoreWriteError:
            self._finish_if_possible(run_id, "failed")  # the run does not stay 'running'
            raise
        failed = [u for u, res in results if res["status"] == "failed"]
        self.store.writes.finish_run(run_id, "failed" if failed else "complete")
        self._summary(results, skipped=len(self.units) - len(todo), run_id=run_id)
        return 1 if failed else 0

    def _warm_up(self) -> None:
        """On CUDA, fla's kernels compiled and tuned as each suite calls the model, at its longest length and the
        run's batch size (run/kernel_warmup.py)."""
        from ccq_eval.run.kernel_warmup import warm_up

        drivers = [(plan.driver, plan.driver.max_length()) for plan in self.plans]
        self.compilations = list(getattr(self.evaluand, "compilations", [])) + warm_up(
            self.evaluand, drivers, batch_size_of(self.evaluand.provenance, self.request), self.out)

    def _compute(self, run_id: str, units: list[Unit], results: list, received) -> None:
        for plan, task_units in self._task_groups(units):
            task_units = self._still_to_run(run_id, task_units, results)
            if not task_units:
                continue
            started = now()
            for unit, outcome in plan.driver.run_units(task_units, self.evaluand):
                results.append((unit, self._write(run_id, unit, outcome, started)))
                received.raise_if_received()  # an interrupt a library swallowed mid-unit
                started = now()

    def _dry_run(self, todo: list[Unit], to_reuse: list[Unit]) -> int:
        self.out(f"{'task':<20}{'length':>8}  state")
        for u in self.units:
            state = ("reuse (computed under another label)" if u in to_reuse else "to run") if u in todo \
                else "done (skipped)"
            self.out(f"{u.task:<20}{u.context_length:>8}  {state}")
        self.out(f"{len(todo) - len(to_reuse)} to run, {len(self.units) - len(todo)} already complete in "
                 f"{self.request.store}" + (f"; {len(to_reuse)} to reuse (computed under another label)"
                                            if to_reuse else ""))
        return 0

    def _interrupted(self, run_id: str, exc: KeyboardInterrupt) -> int:
        self.store.writes.finish_run(run_id, "interrupted")
        # read back from the store: an interrupt can land after a unit's commit and before it is counted here
        stored = self.store.reads.units_of_run(run_id)
        finished = ", ".join(f"{task}@{length}" + ("" if status == "complete" else f" ({status})")
                             for task, length, status in stored) or "none"
        what = "terminated (SIGTERM)" if isinstance(exc, Terminated) else "interrupted"
        self.out(f"{what}; finished units: {finished} ({len(stored)} stored in {self.request.store}). "
                 "Rerun the same command to resume.")
        return 143 if isinstance(exc, Terminated) else 130

    def _unit_record(self, run_id: str, unit: Unit, started: str) -> dict:
        return {"run_id": run_id, "suite": unit.suite, "task": unit.task, "context_length": unit.context_length,
                "unit_key": unit.unit_key, "started": started, "settings": unit.settings}

    def _reuse(self, run_id: str, unit: Unit, started: str) -> dict:
        """This label's unit holding the result another run computed for the key."""
        written = self.store.writes.reuse_unit({**self._unit_record(run_id, unit, started), "status": "complete"})
        score = self.store.reads.primary_value(written.reused_from) if written.reused_from else None
        return {"status": "complete", "unit_id": written.unit_id, "score": score,
                "note": f"reused: computed by run {self.store.reads.run_of_unit(written.reused_from)}"}

    def _still_to_run(self, run_id: str, units: list[Unit], results: list) -> list[Unit]:
        """Units that no other process computed while this run worked on earlier ones (a store shared by runs
        started together): those it did are reused. --force runs them all, and so does a data-parallel run (its
        other ranks evaluate every unit rank 0 planned: skipping one here would leave them waiting)."""
        if self.request.force or self.evaluand.ranks.world_size > 1:
            return units
        done = self.store.reads.complete_unit_keys()
        for unit in units:
            if unit.unit_key in done:
                self.out(f"{unit.task}@{unit.context_length}: computed meanwhile by another run in "
                         f"{self.request.store}; its result is reused")
                results.append((unit, self._reuse(run_id, unit, now())))
        return [u for u in units if u.unit_key not in done]

    def _run_record(self) -> dict:
        prov = self.evaluand.provenance
        r = self.request
        record = machine.record(prov["device"], r.store, self.threads_chosen_by)  # what `ccq-eval env` prints
        versions = {**record.pop("versions"), "machine": record}
        if self.compilations:  # what compiling fla's kernels took, before the first unit
            versions["compilation"] = [compilation.record() for compilation in self.compilations]
        if self.shard is not None:  # which slice of a job this run is: a merge knows when every slice is there
            job = os.environ.get("SLURM_ARRAY_JOB_ID") if r.shard in ("slurm", "auto") else None
            versions["shard"] = {"index": self.shard[0], "count": self.shard[1], "job": job}
        if prov.get("hub"):  # the checkpoint's own version: the hub commit it was resolved to
            versions["checkpoint"] = f"{prov['hub']['repo']}@{prov['hub']['commit']}"
        return {
            "label": self.label, "model_spec": r.model, "weights_sha256": prov["weights_sha256"],
            "model_config": prov["config"], "ccq_overrides": prov.get("ccq_overrides", {}), "dtype": prov["dtype"],
            "device": prov["device"], "batch_size": batch_size_of(prov, r), "seeds": {"seed": r.seed},
            "command_line": r.command_line, "versions": versions,
            "git_sha": git_sha(),
        }

    def _finish_if_possible(self, run_id: str, status: str) -> None:
        try:
            self.store.writes.finish_run(run_id, status)
        except StoreWriteError:  # the store itself is what failed (disk full): nothing more to do
            pass

    def _write(self, run_id: str, unit: Unit, outcome: UnitOutcome, started: str) -> dict:
        if outcome.status == "complete" and (reason := untrusted_number(outcome)):
            outcome = UnitOutcome(status="failed", reason=reason)
        outcome.settings.update(self._positions_warning(unit))
        outcome.settings.update(engine_provenance())
        record = {**self._unit_record(run_id, unit, started), "status": outcome.status, "reason": outcome.reason,
                  "dataset_fingerprint": outcome.fingerprint, "settings": {**unit.settings, **outcome.settings}}
        if outcome.status != "complete":
            self.store.writes.write_unit(record, [], [])
            return {"status": "failed", "reason": outcome.reason}
        if outcome.raw is not None:
            save_raw(self.request.store, run_id, unit.task, unit.context_length, outcome.raw)
        metrics = [metric_row(self.label, self.request.model, m.name, m.value, stderr=m.stderr, n=m.n,
                              higher_is_better=m.higher_is_better, is_primary=m.is_primary) for m in outcome.metrics]
        samples = [dataclasses.asdict(s) for s in outcome.samples]
        written = self.store.writes.write_unit(record, metrics, samples, replace=self.request.force)
        primary = next(m for m in outcome.metrics if m.is_primary)
        if written.reused_from is not None:  # another process computed this key first: the store keeps that result
            kept = "its result is reused under this label" if written.unit_id else "this label holds it already"
            return {"status": "complete", "unit_id": written.unit_id, "score": self.store.reads.primary_value(
                written.reused_from), "note": f"another run computed this unit first; {kept}"}
        notes = [fewer_than_asked(primary.n, unit.settings.get("samples")),
                 *(outcome.settings.get(k) for k in WARNINGS)]  # weak but valid output: said, and stored
        return {"status": "complete", "unit_id": written.unit_id, "score": primary.value,
                "note": "; ".join(n for n in notes if n) or None}

    def _positions_warning(self, unit: Unit) -> dict:
        """Said (and stored with the unit) when its length passes a rotary model's trained positions."""
        from ccq_eval.models.capabilities import rotary_positions

        trained = rotary_positions(self.evaluand.provenance.get("config") or {})
        if trained is None or unit.context_length <= trained:
            return {}
        return {"positions_warning": f"{unit.context_length} tokens pass the model's {trained} trained positions "
                                     "(max_position_embeddings): its rotary positions extrapolate"}

    def _summary(self, results, skipped: int, run_id: str) -> None:
        self.out(f"\nrun {run_id} ({visible(self.label)}) -> {self.request.store}")
        self.out(f"{'task':<20}{'length':>8}  {'status':<9}{'primary':>11}")
        for unit, res in results:
            score = f"{res['score']:.2f}" if res["status"] == "complete" else ""
            self.out(f"{unit.task:<20}{unit.context_length:>8}  {res['status']:<9}{score:>11}"
                     + (f"  {res['reason']}" if res["status"] == "failed" else "")
                     + (f"  ({res['note']})" if res.get("note") else ""))
        if skipped:
            self.out(f"({skipped} units already complete, skipped)")


def engine_provenance() -> dict:
    """What the engine decided in this process so far, recorded with each unit: the path each of ccq-eval's own
    kernels took (ops/trust.py: a unit computed after a kernel was turned off names the fallback), and the
    refill cost measured on the model (generation/refill_cost.py, on CUDA)."""
    from ccq_eval.generation import refill_cost
    from ccq_eval.ops import trust

    found = {"kernels": trust.verdicts(), "refill_cost": refill_cost.recorded()}
    return {key: value for key, value in found.items() if value}


def run_suite(request: RunRequest, evaluand_loader=load_evaluand, out=print) -> int:
    runner = Runner(request, evaluand_loader, out).prepare()
    try:
        return runner.run()
    finally:
        if runner.store is not None:  # closed here, its write-ahead log folded in: the file is the whole store
            runner.store.close()
