"""Plans a suite's units (task x context length), skips those already complete in the store, runs
the rest through lm-eval, and writes each unit in one transaction when it ends.

Everything that can be wrong with the input (suite, flags, haystack, store, checkpoint, a length
too small for the prompt) is checked before the first write: bad input leaves the store untouched.
"""

from __future__ import annotations

import importlib.resources
import json
import logging
import math
import shlex
import subprocess
import sys
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from ccq_eval.data.cache import stable_hash
from ccq_eval.suites import Suite, format_length, get_suite, parse_lengths, parse_tasks
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
    from ccq_eval.lm import CCQEvalLM
    from ccq_eval.models.loading import load_model

    model, tokenizer, provenance = load_model(request.model, device=request.device, dtype=request.dtype,
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


class SuiteRunner:
    """Runs one RunRequest. ``evaluand_loader`` is injectable (tests use scripted LMs)."""

    def __init__(self, request: RunRequest, evaluand_loader: Callable[[RunRequest, int], Evaluand] = load_evaluand,
                 out=print):
        self.request = request
        self.load = evaluand_loader
        self.out = out

    # --- planning (no writes) ---------------------------------------------------------------------

    def prepare(self):
        from ccq_eval.data import sniah
        from ccq_eval.data.haystack import load_haystack, resolve_haystack_path

        r = self.request
        self.suite: Suite = get_suite(r.suite)
        self.tasks = parse_tasks(self.suite, r.tasks)
        self.lengths = parse_lengths(r.lengths) if r.lengths else self.suite.default_lengths
        self.samples = r.samples if r.samples is not None else self.suite.default_samples
        if self.samples is not None and self.samples <= 0:
            from ccq_eval.suites import SuiteError

            raise SuiteError(f"--samples {self.samples}: must be a positive count")
        self.haystack_path = resolve_haystack_path(r.haystack, r.data_dir)
        needs_essays = any(sniah.VARIANTS[t].haystack == "essay" for t in self.tasks)
        self.haystack = load_haystack(self.haystack_path) if needs_essays else None
        self.evaluand = self.load(r, max(self.lengths))
        self.label = default_label(r)
        tokenizer = self.evaluand.tokenizer
        for task in self.tasks:  # a length that cannot hold the prompt skeleton is bad input
            smallest = sniah.skeleton_tokens(task, tokenizer, self.haystack) + sniah.TOKENS_TO_GENERATE
            for length in self.lengths:
                if length < smallest:
                    raise sniah.SniahError(f"--lengths: {length} tokens cannot hold a {task} prompt "
                                           f"({smallest} tokens at least with an empty haystack); use larger lengths")
        self.store = Store(r.store)  # opened last: bad input above never creates or touches a store
        self.units = self.plan()
        return self

    def plan(self) -> list[Unit]:
        from ccq_eval.data import sniah

        prov = self.evaluand.provenance
        tokenizer_fp = sniah.tokenizer_fingerprint(self.evaluand.tokenizer)
        units = []
        for task in self.tasks:
            essay = sniah.VARIANTS[task].haystack == "essay"
            for length in self.lengths:
                settings = {
                    "samples": self.samples, "seed": self.request.seed, "dtype": prov["dtype"],
                    # the budget this unit is evaluated under (prompts are never cut, so the wrapper's
                    # overall cap, the longest length of the run, changes no number)
                    "batch_size": self.request.batch_size, "max_length": length,
                    "task_version": 1.0, "tokens_to_generate": sniah.TOKENS_TO_GENERATE,
                    "haystack": ({"name": self.haystack.name, "sha256": self.haystack.fingerprint} if essay else None),
                }
                data_key = sniah.dataset_key(task, tokenizer_fp, length, self.samples, self.request.seed, self.haystack)
                identity = {"weights": prov["weights_sha256"], "config": numeric_config(prov), "suite": self.suite.name,
                            "task": task, "context_length": length, "settings": settings, "data": data_key}
                units.append(Unit(self.suite.name, task, length, settings, data_key, stable_hash(identity)))
        return units

    # --- running ------------------------------------------------------------------------------------

    def run(self) -> int:
        done = self.store.complete_unit_keys()
        todo = [u for u in self.units if self.request.force or u.unit_key not in done]
        if self.request.dry_run:
            self.out(f"{'task':<10}{'length':>8}  state")
            for u in self.units:
                self.out(f"{u.task:<10}{u.context_length:>8}  {'to run' if u in todo else 'done (skipped)'}")
            self.out(f"{len(todo)} to run, {len(self.units) - len(todo)} already complete in {self.request.store}")
            return 0
        if not todo:
            self.out(f"all {len(self.units)} units already complete in {self.request.store} (--force reruns them)")
            return 0
        run_id = self.store.begin_run(self._run_record())
        results = []
        try:
            for unit in todo:
                results.append((unit, self._run_unit(run_id, unit)))
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

    def _run_unit(self, run_id: str, unit: Unit) -> dict:
        started = now()
        record = {"run_id": run_id, "suite": unit.suite, "task": unit.task, "context_length": unit.context_length,
                  "unit_key": unit.unit_key, "started": started, "settings": unit.settings}
        try:
            records, fingerprint = self._build_data(unit)
            metrics, samples, raw = self._evaluate(unit, records)
        except Exception as exc:  # noqa: BLE001 - any failure fails this unit, with its reason
            reason = f"{exc.__class__.__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:500]
            logging.getLogger(__name__).debug("unit failed\n%s", traceback.format_exc())
            self.store.write_unit({**record, "status": "failed", "reason": reason}, [], [])
            return {"status": "failed", "reason": reason}
        self._save_raw(run_id, unit, raw)
        unit_id = self.store.write_unit({**record, "status": "complete", "dataset_fingerprint": fingerprint,
                                         "settings": {**unit.settings, "n_samples": len(samples)}}, metrics, samples)
        return {"status": "complete", "unit_id": unit_id, "score": metrics[0]["value"]}

    def _build_data(self, unit: Unit):
        from tqdm import tqdm

        from ccq_eval.data import sniah

        with tqdm(total=self.samples, desc=f"data {unit.task} {format_length(unit.context_length)}",
                  disable=None, leave=False) as bar:
            records, fingerprint, _ = sniah.load_or_generate(unit.task, self.evaluand.tokenizer, unit.context_length,
                                                             self.samples, self.request.seed, self.haystack, bar)
        return records, fingerprint

    def _evaluate(self, unit: Unit, records: list[dict]):
        import lm_eval
        from lm_eval.tasks import TaskManager

        from ccq_eval.data.sniah import prompt_of

        for name in ("lm_eval", "lm_eval.api.task", "lm_eval.evaluator"):
            logging.getLogger(name).setLevel(logging.ERROR)
        metadata = {"tokenizer": self.evaluand.tokenizer_path, "max_seq_lengths": [unit.context_length],
                    "num_samples": self.samples, "seed": self.request.seed, "haystack": self.haystack_path or ""}
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
        out = lm_eval.simple_evaluate(model=self.evaluand.lm, tasks=[unit.task], task_manager=manager,
                                      log_samples=True, bootstrap_iters=0, random_seed=self.request.seed,
                                      numpy_random_seed=self.request.seed, torch_random_seed=self.request.seed)
        logged = out["samples"][unit.task]
        if len(logged) != len(records):
            raise RuntimeError(f"lm-eval returned {len(logged)} samples for {len(records)} prompts")
        samples, scores = [], []
        for entry in sorted(logged, key=lambda e: e["doc_id"]):
            doc = entry["doc"]
            score = float(entry["score"])
            if not math.isfinite(score):
                raise RuntimeError(f"non-finite score for sample {doc['index']}")
            scores.append(score)
            prediction = entry["filtered_resps"][0]
            samples.append({
                "idx": doc["index"], "target": doc["outputs"][0], "prediction": prediction, "score": score,
                "prompt_sha256": stable_hash(prompt_of(doc)),
                "fields": {"depth": doc["depth"], "key": doc["key"], "prompt_tokens": doc["length"] - 128,
                           "haystack_units": doc["haystack_units"], "haystack_passes": doc["haystack_passes"],
                           "empty_prediction": not prediction.strip()},
            })
        n = len(scores)
        mean = sum(scores) / n
        stderr = (sum((s - mean) ** 2 for s in scores) / (n - 1) / n) ** 0.5 if n > 1 else None
        correct = sum(1 for s in scores if s > 0)
        metric = {"label": self.label, "model": self.request.model, "metric": "score", "value": mean,
                  "stderr": stderr, "n": n, "higher_is_better": True, "is_primary": True}
        count = {**metric, "metric": "correct", "value": float(correct), "stderr": None, "is_primary": False}
        raw = {k: v for k, v in out.items() if k != "samples"}
        return [metric, count], samples, raw

    def _save_raw(self, run_id: str, unit: Unit, raw: dict) -> None:
        if self.request.store.startswith("file:"):
            return
        folder = Path(self.request.store).resolve().parent / "raw" / run_id
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{unit.task}-{unit.context_length}.json").write_text(json.dumps(raw, indent=1, default=str))

    def _summary(self, results, skipped: int, run_id: str) -> None:
        self.out(f"\nrun {run_id} ({self.label}) -> {self.request.store}")
        self.out(f"{'task':<10}{'length':>8}  {'status':<9}{'score':>7}")
        for unit, res in results:
            score = f"{res['score']:.1f}" if res["status"] == "complete" else ""
            self.out(f"{unit.task:<10}{unit.context_length:>8}  {res['status']:<9}{score:>7}"
                     + (f"  {res['reason']}" if res["status"] == "failed" else ""))
        if skipped:
            self.out(f"({skipped} units already complete, skipped)")


def run_suite(request: RunRequest, evaluand_loader=load_evaluand, out=print) -> int:
    return SuiteRunner(request, evaluand_loader, out).prepare().run()
