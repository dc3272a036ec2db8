"""Plans a run's units (suite x task x context length), skips those already complete in the store,
has each suite's driver (suite_<name>.py) evaluate the rest, and writes each unit in one transaction
when it ends.

Everything that can be wrong with the input (suite, flags, haystack, store, checkpoint, a length
too small for the prompt) is checked before the first write: bad input leaves the store untouched.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import os
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ccq_eval.data.cache import stable_hash
from ccq_eval.suites import Suite, get_suite, parse_lengths, parse_tasks
from ccq_eval.store import Store, now

# the plugins: tasks/ in the repository, installed as the package ccq_eval.tasks (wheel or editable)
TASKS_DIR = Path(str(importlib.resources.files("ccq_eval.tasks")))
# config fields that say nothing about the numbers a model produces
VOLATILE_CONFIG_KEYS = ("transformers_version", "_name_or_path", "name_or_path", "architectures", "dtype",
                        "torch_dtype", "use_cache", "output_attentions", "output_hidden_states")


@dataclass
class RunRequest:
    model: str
    suite: str
    tasks: str | None = None
    lengths: str | None = None
    samples: int | None = None
    label: str | None = None
    store: str = "results/ccq.db"
    data_dir: str | None = None
    haystack: str | None = None
    seed: int = 0
    device: str = "auto"
    dtype: str | None = None
    batch_size: int = 1
    force: bool = False
    dry_run: bool = False
    allow_pickle: bool = False
    ccq_lambda: float | None = None
    ccq_sigma_scale: str | None = None
    engine: str | None = None  # longppl: one-pass (default) or lm-eval
    shard: str | None = None  # "i/n": this job runs the i-th of n deterministic slices of the units
    command_line: str = field(default_factory=lambda: shlex.join(sys.argv))


@dataclass
class Evaluand:
    """What a suite evaluates: an lm-eval LM, its tokenizer (and a folder it can be reloaded from)."""

    lm: object
    tokenizer: object
    tokenizer_path: str
    provenance: dict


@dataclass
class Unit:
    suite: str
    task: str
    context_length: int
    settings: dict
    data_key: dict
    unit_key: str


def parse_shard(text: str | None) -> tuple[int, int] | None:
    from ccq_eval.suites import SuiteError

    if not text:
        return None
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise SuiteError(f"--shard {text!r}: expected i/n, e.g. 0/4 (0-based, as SLURM array ids)") from None
    if count < 1 or not 0 <= index < count:
        raise SuiteError(f"--shard {text!r}: need 0 <= i < n")
    return index, count


def select_shard(units: list, shard: tuple[int, int] | None) -> list:
    """Whole (suite, task) groups go round-robin to shards, in planning order (deterministic; a
    longppl corpus's lengths share one pass, so they stay together)."""
    if shard is None:
        return units
    index, count = shard
    groups = list(dict.fromkeys((u.suite, u.task) for u in units))
    mine = {g for j, g in enumerate(groups) if j % count == index}
    return [u for u in units if (u.suite, u.task) in mine]


def ccq_overrides(request: RunRequest) -> dict:
    overrides = {}
    if request.ccq_lambda is not None:
        overrides.update(ccq_fixed_lambda=float(request.ccq_lambda), ccq_sigma_scale=request.ccq_sigma_scale or "trace")
    elif request.ccq_sigma_scale is not None:
        overrides["ccq_sigma_scale"] = request.ccq_sigma_scale
    return overrides


def default_label(request: RunRequest) -> str:
    if request.label:
        return request.label
    name = request.model[4:] if request.model.startswith("zoo:") else Path(request.model.rstrip("/")).name
    overrides = ccq_overrides(request)
    if "ccq_fixed_lambda" in overrides:
        name += f"+ccq{overrides['ccq_fixed_lambda']:g}"
        if overrides["ccq_sigma_scale"] != "trace":
            name += f"-{overrides['ccq_sigma_scale']}"
    return name


def load_evaluand(request: RunRequest, max_length: int) -> Evaluand:
    """The default: a checkpoint through load_model, wrapped for lm-eval with an explicit budget."""
    from ccq_eval.lm import CCQEvalLM, distributed_rank
    from ccq_eval.models.loading import load_model

    device = request.device
    rank, world = distributed_rank()
    if world > 1 and device in ("auto", "cuda"):  # one GPU per rank under accelerate launch / torchrun
        import torch

        device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}" if torch.cuda.is_available() else "cpu"
    model, tokenizer, provenance = load_model(request.model, device=device, dtype=request.dtype,
                                              allow_pickle=request.allow_pickle,
                                              ccq_overrides=ccq_overrides(request) or None)
    lm = CCQEvalLM(model, tokenizer, max_length=max_length, batch_size=request.batch_size)
    return Evaluand(lm=lm, tokenizer=tokenizer, tokenizer_path=provenance["path"], provenance=provenance)


def git_sha() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).resolve().parent, capture_output=True,
                             text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None


def numeric_config(provenance: dict) -> dict:
    return {k: v for k, v in provenance["config"].items() if k not in VOLATILE_CONFIG_KEYS}


@dataclass
class UnitOutcome:
    """What a driver hands back for one unit; the runner writes it in one transaction."""

    status: str  # complete | failed
    reason: str | None = None
    metrics: list[dict] = field(default_factory=list)
    samples: list[dict] = field(default_factory=list)
    fingerprint: str | None = None
    settings: dict = field(default_factory=dict)  # recorded additions (counts of skipped items, ...)
    raw: dict | None = None


def failure(exc: BaseException) -> UnitOutcome:
    text = str(exc).splitlines()[0] if str(exc) else ""
    logging.getLogger(__name__).debug("unit failed\n%s", traceback.format_exc())
    return UnitOutcome(status="failed", reason=f"{exc.__class__.__name__}: {text}"[:500])


def evaluate_each(units, evaluate):
    """(unit, outcome) per unit; an exception fails that unit with its reason and the run goes on."""
    for unit in units:
        try:
            yield unit, evaluate(unit)
        except Exception as exc:  # noqa: BLE001 - any failure fails this unit, with its reason
            yield unit, failure(exc)


def mean_and_stderr(scores: list[float]) -> tuple[float, float | None]:
    """The mean and its standard error (sample standard deviation / sqrt(n))."""
    n = len(scores)
    mean = sum(scores) / n
    return mean, ((sum((s - mean) ** 2 for s in scores) / (n - 1) / n) ** 0.5 if n > 1 else None)


class SuiteRunner:
    """Runs one RunRequest. ``evaluand_loader`` is injectable (tests use scripted LMs); the suite's
    driver (suite_<name>.py) knows its data, its unit settings and how to evaluate its units."""

    def __init__(self, request: RunRequest, evaluand_loader: Callable[[RunRequest, int], Evaluand] = load_evaluand,
                 out=print):
        self.request = request
        self.load = evaluand_loader
        self.out = out

    # --- planning (no writes) ---------------------------------------------------------------------

    def prepare(self):
        from ccq_eval.suites import SuiteError

        r = self.request
        if r.suite == "all":
            if r.tasks or r.lengths:
                raise SuiteError("--suite all runs every suite with its default tasks and lengths; "
                                 "drop --tasks / --lengths, or run one suite")
            self.plans = [SuitePlan(self, get_suite(name)) for name in ALL_ORDER]
        else:
            self.plans = [SuitePlan(self, get_suite(r.suite))]
        for plan in self.plans:
            plan.driver.check_inputs()  # data present and well-formed, before the model is loaded
        self.evaluand = self.load(r, max(plan.driver.max_length() for plan in self.plans))
        self.label = default_label(r)
        for plan in self.plans:
            plan.driver.check_with_tokenizer()  # lengths the prompts or documents cannot fill
        shard = parse_shard(r.shard)
        self.store = Store(r.store)  # opened last: bad input above never creates or touches a store
        self.units = select_shard([unit for plan in self.plans for unit in self.plan(plan)], shard)
        return self

    def plan(self, plan: "SuitePlan") -> list[Unit]:
        prov = self.evaluand.provenance
        units = []
        for task in plan.tasks:
            for length in plan.lengths:
                settings, data_key = plan.driver.unit_settings(task, length)
                settings = {"samples": plan.samples, "seed": self.request.seed, "dtype": prov["dtype"],
                            "batch_size": self.request.batch_size, **settings}
                identity = {"weights": prov["weights_sha256"], "config": numeric_config(prov), "suite": plan.suite.name,
                            "task": task, "context_length": length, "settings": settings, "data": data_key}
                units.append(Unit(plan.suite.name, task, length, settings, data_key, stable_hash(identity)))
        return units

    # --- running ------------------------------------------------------------------------------------

    @property
    def rank(self) -> int:
        return getattr(self.evaluand.lm, "rank", 0)

    def run(self) -> int:
        done = self.store.complete_unit_keys()
        todo = [u for u in self.units if self.request.force or u.unit_key not in done]
        if self.rank != 0:  # data-parallel helper: evaluates its share of every unit; rank 0 writes
            for plan in self.plans:
                for task in plan.tasks:
                    task_units = [u for u in todo if u.suite == plan.suite.name and u.task == task]
                    if task_units:
                        for _ in plan.driver.run_units(task_units):
                            pass
            return 0
        if self.request.dry_run:
            self.out(f"{'task':<20}{'length':>8}  state")
            for u in self.units:
                self.out(f"{u.task:<20}{u.context_length:>8}  {'to run' if u in todo else 'done (skipped)'}")
            self.out(f"{len(todo)} to run, {len(self.units) - len(todo)} already complete in {self.request.store}")
            return 0
        if not todo:
            self.out(f"all {len(self.units)} units already complete in {self.request.store} (--force reruns them)")
            return 0
        run_id = self.store.begin_run(self._run_record())
        results = []
        try:
            for plan in self.plans:
                for task in plan.tasks:
                    task_units = [u for u in todo if u.suite == plan.suite.name and u.task == task]
                    if not task_units:
                        continue
                    started = now()
                    for unit, outcome in plan.driver.run_units(task_units):
                        results.append((unit, self._write(run_id, unit, outcome, started)))
                        started = now()
        except KeyboardInterrupt:
            self.store.finish_run(run_id, "interrupted")
            finished = ", ".join(f"{u.task}@{u.context_length}" for u, _ in results) or "none"
            self.out(f"interrupted; finished units: {finished}. Rerun the same command to resume.")
            return 130
        failed = [u for u, res in results if res["status"] == "failed"]
        self.store.finish_run(run_id, "failed" if failed else "complete")
        self._summary(results, skipped=len(self.units) - len(todo), run_id=run_id)
        return 1 if failed else 0

    def _run_record(self) -> dict:
        import lm_eval

        prov = self.evaluand.provenance
        r = self.request
        return {
            "label": self.label, "model_spec": r.model, "weights_sha256": prov["weights_sha256"],
            "model_config": prov["config"], "ccq_overrides": prov.get("ccq_overrides", {}), "dtype": prov["dtype"],
            "device": prov["device"], "batch_size": r.batch_size, "seeds": {"seed": r.seed},
            "command_line": r.command_line, "versions": {**prov["versions"], "lm_eval": lm_eval.__version__},
            "git_sha": git_sha(),
        }

    def metric(self, name: str, value: float, **extra) -> dict:
        """A metric row with this run's label and model spec."""
        return {"label": self.label, "model": self.request.model, "metric": name, "value": value, **extra}

    def _write(self, run_id: str, unit: Unit, outcome: UnitOutcome, started: str) -> dict:
        record = {"run_id": run_id, "suite": unit.suite, "task": unit.task, "context_length": unit.context_length,
                  "unit_key": unit.unit_key, "started": started, "status": outcome.status, "reason": outcome.reason,
                  "dataset_fingerprint": outcome.fingerprint, "settings": {**unit.settings, **outcome.settings}}
        if outcome.status != "complete":
            self.store.write_unit(record, [], [])
            return {"status": "failed", "reason": outcome.reason}
        if outcome.raw is not None:
            self._save_raw(run_id, unit, outcome.raw)
        unit_id = self.store.write_unit(record, outcome.metrics, outcome.samples)
        primary = next(m["value"] for m in outcome.metrics if m.get("is_primary"))
        return {"status": "complete", "unit_id": unit_id, "score": primary}

    def _save_raw(self, run_id: str, unit: Unit, raw: dict) -> None:
        if self.request.store.startswith("file:"):
            return
        folder = Path(self.request.store).resolve().parent / "raw" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{unit.task}-{unit.context_length}.json").write_text(json.dumps(raw, indent=1, default=str))

    def _summary(self, results, skipped: int, run_id: str) -> None:
        self.out(f"\nrun {run_id} ({self.label}) -> {self.request.store}")
        self.out(f"{'task':<20}{'length':>8}  {'status':<9}{'primary':>11}")
        for unit, res in results:
            score = f"{res['score']:.2f}" if res["status"] == "complete" else ""
            self.out(f"{unit.task:<20}{unit.context_length:>8}  {res['status']:<9}{score:>11}"
                     + (f"  {res['reason']}" if res["status"] == "failed" else ""))
        if skipped:
            self.out(f"({skipped} units already complete, skipped)")


ALL_ORDER = ("lm", "sniah", "longppl", "longbench")  # the paper's tables, in order


class SuitePlan:
    """One suite of a run: its tasks, lengths, samples and driver. Drivers read these (and the
    run's request, evaluand and metric rows) from here."""

    def __init__(self, runner: SuiteRunner, suite: Suite):
        from ccq_eval.suites import SuiteError

        r = runner.request
        self.runner, self.suite, self.request = runner, suite, r
        self.tasks = parse_tasks(suite, r.tasks)
        self.lengths = (suite.default_lengths if suite.fixed_lengths or not r.lengths else parse_lengths(r.lengths))
        self.samples = r.samples if r.samples is not None else suite.default_samples
        if self.samples is not None and self.samples <= 0:
            raise SuiteError(f"--samples {self.samples}: must be a positive count")
        self.driver = driver_for(suite.name)(self)

    @property
    def evaluand(self) -> Evaluand:
        return self.runner.evaluand

    def metric(self, name: str, value: float, **extra) -> dict:
        return self.runner.metric(name, value, **extra)


def driver_for(suite: str):
    if suite == "lm":
        from ccq_eval.suite_lm import LmDriver

        return LmDriver
    if suite == "sniah":
        from ccq_eval.suite_sniah import SniahDriver

        return SniahDriver
    if suite == "longbench":
        from ccq_eval.suite_longbench import LongBenchDriver

        return LongBenchDriver
    from ccq_eval.suite_longppl import LongpplDriver

    return LongpplDriver


def run_suite(request: RunRequest, evaluand_loader=load_evaluand, out=print) -> int:
    return SuiteRunner(request, evaluand_loader, out).prepare().run()
