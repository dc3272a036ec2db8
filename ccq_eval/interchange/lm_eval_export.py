"""One run of the store written as lm-eval writes a run (``--output_path --log_samples``): ``results_<date>.json``
(``results``, ``versions``, ``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ...) and a
``samples_<task>_<date>.jsonl`` per task with stored samples. Metrics of suites with a context length are
named as lm-eval's RULER tasks name theirs: ``"<length>,none"`` holds the primary metric; every metric is also
``"<metric>@<length>,none"``. The run is read through the store's ``run_bundle``."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ccq_eval.errors import BadInput


def _sanitized(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", name).strip("_") or "model"


@dataclass
class _Sections:
    """The per-task sections of lm-eval's results document, filled unit by unit."""

    results: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    n_shot: dict = field(default_factory=dict)
    higher_is_better: dict = field(default_factory=dict)
    n_samples: dict = field(default_factory=dict)
    samples: dict = field(default_factory=dict)
    # the suites whose units are lm-eval's own tasks in its one window (accuracies stored in percent)
    own_tasks: frozenset[str] = frozenset()

    def add(self, bundle) -> None:
        unit, settings = bundle.unit, bundle.unit.settings or {}
        task, length, lm_table = unit.task, unit.context_length, unit.suite in self.own_tasks
        entry = self.results.setdefault(task, {"alias": task})
        count = None
        for m in bundle.metrics:
            scale = 100.0 if lm_table and m.higher_is_better else 1.0  # the lm suite stores accuracies in percent
            name = m.metric if lm_table else f"{m.metric}@{length}"
            entry[f"{name},none"] = m.value / scale
            entry[f"{name}_stderr,none"] = "N/A" if m.stderr is None else m.stderr / scale
            if not lm_table and m.is_primary:
                entry[f"{length},none"] = m.value / scale  # lm-eval's RULER tasks name a length's score so
            self.higher_is_better.setdefault(task, {})[name] = m.higher_is_better
            count = m.n
        self.versions[task] = settings.get("task_version")
        self.n_shot[task] = settings.get("num_fewshot", 0)
        previous = self.n_samples.get(task, {"original": 0, "effective": 0})
        self.n_samples[task] = {k: previous[k] + (count or 0) for k in ("original", "effective")}
        self.samples.setdefault(task, []).extend(
            {"doc_id": s.idx, "context_length": length, "target": s.target, "filtered_resps": [s.prediction],
             "prompt_hash": s.prompt_sha256, "score": s.score, **(s.fields or {})} for s in bundle.samples)


def _document(run, sections: _Sections, max_length: int) -> dict:
    versions, seeds = run.versions or {}, run.seeds or {}
    return {
        "results": sections.results, "group_subtasks": {},
        "configs": {t: {"task": t, "metadata": {"version": v}} for t, v in sections.versions.items()},
        "versions": sections.versions, "n-shot": sections.n_shot, "higher_is_better": sections.higher_is_better,
        "n-samples": sections.n_samples,
        "config": {"model": "ccq-eval", "model_args": {"pretrained": run.model_spec, "label": run.label},
                   "model_dtype": run.dtype, "batch_size": run.batch_size, "device": run.device,
                   "random_seed": seeds.get("seed", seeds.get("random_seed")), "ccq_eval_run": run.id,
                   "weights_sha256": run.weights_sha256, "ccq_overrides": run.ccq_overrides or {},
                   # a run that did not end whole (interrupted, failed, still running) or is one shard of a job says
                   # so, and its ingest keeps it so
                   "ccq_eval_status": run.status, "ccq_eval_shard": versions.get("shard")},
        "git_hash": run.git_sha, "date": datetime.fromisoformat(run.started).timestamp(),
        "lm_eval_version": versions.get("lm_eval"), "transformers_version": versions.get("transformers"),
        "model_name": run.model_spec, "model_name_sanitized": _sanitized(run.model_spec), "task_hashes": {},
        "model_source": "ccq-eval",
        # what lm-eval records beside the tokenizer: ccq-eval gives every unit a budget of at least its length and
        # refuses a prompt that does not fit it, so no number here came from a cut prompt
        "max_length": max_length,
    }


def export_run(store, run_id: str, out: Path, own_tasks: frozenset[str] = frozenset()) -> list[Path]:
    """Write run ``run_id`` of ``store`` in lm-eval's layout under ``out/<model>/``; the written paths. ``own_tasks``:
    the suites whose tasks are lm-eval's own (``Suite.any_lm_eval_task``), exported under their names as lm-eval
    scores them, the others per length (``task@length``)."""
    bundle = store.reads.run_bundle(run_id)
    if bundle is None:
        raise BadInput(f"run {run_id!r}: no such run in {store.path} (see ccq-eval runs)")
    if not bundle.units:
        raise BadInput(f"run {run_id!r}: no complete unit to export")
    sections = _Sections(own_tasks=own_tasks)
    for unit in bundle.units:
        sections.add(unit)
    stamp = datetime.fromisoformat(bundle.run.started).strftime("%Y-%m-%dT%H-%M-%S.%f")
    folder = out / _sanitized(bundle.run.model_spec)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"results_{stamp}.json"]
    max_length = max(unit.unit.context_length for unit in bundle.units)
    written[0].write_text(json.dumps(_document(bundle.run, sections, max_length), indent=2, default=str))
    for task, rows in sections.samples.items():
        if rows:
            path = folder / f"samples_{task}_{stamp}.jsonl"
            path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
            written.append(path)
    return written
