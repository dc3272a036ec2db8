"""lm-eval's results layout, in and out of the store.

In: a ``results_<date>.json`` that lm-eval wrote (``--output_path``), with the ``samples_<task>_<date>.jsonl``
files beside it when it ran with ``--log_samples``. Each task of the lm suite's table becomes one complete lm
unit with lm-eval's numbers in the lm suite's units (accuracies in percent, perplexities as they are); its
provenance is lm-eval's own record (model and model args, lm-eval and transformers versions, task versions
and hashes, samples evaluated, seeds). Everything is checked before the store is touched.

Out: one run of the store as lm-eval writes a run: ``results_<date>.json`` (``results``, ``versions``,
``n-shot``, ``higher_is_better``, ``n-samples``, ``config``, ...) and a ``samples_<task>_<date>.jsonl`` per task
with stored samples. Metrics of suites with a context length are named as lm-eval's RULER tasks name theirs:
``"<length>,none"`` holds the primary metric; every metric is also ``"<metric>@<length>,none"``.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

from ccq_eval.data.cache import stable_hash
from ccq_eval.errors import BadInput

SOURCE = "lm-eval results JSON"
LM_CONTEXT = 2048  # the lm suite's window (suites/lm/driver.py), lm-eval's default max_length


class LmEvalResultsError(BadInput):
    """A results file that cannot be read as lm-eval's; the message names it and what is wrong."""


def is_results_file(path: Path) -> bool:
    return path.suffix == ".json" and path.is_file()


def _load_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LmEvalResultsError(f"{path}: not readable as JSON ({str(exc).splitlines()[0][:120]}); pass the "
                                 "results_<date>.json lm-eval wrote") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or not isinstance(data.get("config"), dict):
        raise LmEvalResultsError(f"{path}: no 'results' and 'config' objects: not an lm-eval results file "
                                 "(lm-eval --output_path writes results_<date>.json)")
    return data


def _model_identity(config: dict) -> tuple[str, str, dict]:
    """(model spec, weights identity, model config): a local checkpoint folder is identified by its weights'
    sha256 and config.json, as ccq-eval's own runs identify it; anything else by lm-eval's model name and sha."""
    from ccq_eval.models.loading import ModelLoadError, _weight_files, weights_sha256

    args = config.get("model_args") or {}
    if isinstance(args, str):  # older lm-eval versions store the --model_args string
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    spec = str(args.get("pretrained") or config.get("model_name") or config.get("model") or "")
    folder = Path(spec) if spec else None
    if folder is not None and folder.is_dir() and (folder / "config.json").is_file():
        try:  # the files, in the order, that a ccq-eval run of this folder hashes (shards by their index)
            weights = _weight_files(folder, allow_pickle=False)
        except ModelLoadError:
            weights = []
        if weights:
            return spec, weights_sha256(weights), json.loads((folder / "config.json").read_text())
    revision = config.get("model_sha") or args.get("revision") or config.get("model_revision") or "unknown"
    return spec, f"{SOURCE}: {spec}@{revision}", {"lm_eval_model": config.get("model"), "model_args": args}


def _finite(path: Path, task: str, key: str, value) -> float | None:
    if value is None or value == "N/A":
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise LmEvalResultsError(f"{path}: {task} {key} = {value!r} is not a finite number; the file is damaged or "
                                 "not lm-eval's")
    return float(value)


def _samples(path: Path, task: str, primary: str) -> list[dict]:
    """The --log_samples records of ``task`` beside the results file (same date suffix), as sample rows."""
    stamp = path.stem.removeprefix("results_")
    found = path.parent / f"samples_{task}_{stamp}.jsonl"
    if not found.is_file():
        return []
    rows = []
    for number, line in enumerate(found.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise LmEvalResultsError(f"{found}: line {number} is not JSON; the samples file is damaged") from None
        score = record.get(primary)
        rows.append({"idx": int(record.get("doc_id", number - 1)), "prompt_sha256": record.get("prompt_hash"),
                     "target": None if record.get("target") is None else str(record["target"]),
                     "prediction": json.dumps(record.get("filtered_resps"))[:2000],
                     "score": float(score) if isinstance(score, (int, float)) else None,
                     "fields": {k: record[k] for k in ("doc_hash", "target_hash", *record.get("metrics", []))
                                if k in record}})
    return rows


def read_results(path: Path, label: str | None = None) -> tuple[dict, list[tuple[dict, list[dict], list[dict]]], list[str]]:
    """(run record, [(unit, metric rows, sample rows)], tasks left out with why) from one results file."""
    from ccq_eval.suites.lm.data import METRICS, PERPLEXITIES

    data = _load_json(path)
    config = data["config"]
    spec, weights, model_config = _model_identity(config)
    if not spec:
        raise LmEvalResultsError(f"{path}: config names no model (model_args.pretrained / model_name)")
    label = label or Path(spec.rstrip("/")).name
    started = data.get("date")
    started = datetime.fromtimestamp(float(started), timezone.utc).isoformat() if isinstance(started, (int, float)) \
        else datetime.now(timezone.utc).isoformat()
    versions = {"lm_eval": data.get("lm_eval_version"), "transformers": data.get("transformers_version"),
                "task_versions": data.get("versions", {}), "source": SOURCE, "lm_eval_model": config.get("model"),
                "model_args": config.get("model_args"), "results_file": path.name}
    run = {"label": label, "model_spec": spec, "weights_sha256": weights, "model_config": model_config,
           "ccq_overrides": {}, "dtype": str(config.get("model_dtype") or "").replace("torch.", "") or "unknown",
           "device": str(config.get("device") or "unknown"),
           "batch_size": int(config["batch_size"]) if str(config.get("batch_size", "")).isdigit() else 0,
           "seeds": {k: config.get(k) for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")},
           "command_line": f"lm-eval ({path.name})", "versions": versions, "git_sha": data.get("git_hash"),
           "started": started}
    groups = set(data.get("group_subtasks") or {})
    units, left_out = [], []
    for task, numbers in data["results"].items():
        if task in groups:
            continue
        if task not in METRICS:
            left_out.append(f"{task} (not a task of the lm table: {', '.join(METRICS)})")
            continue
        names, primary = METRICS[task]
        missing = [n for n in names if f"{n},none" not in numbers]
        if missing:
            left_out.append(f"{task} (no {', '.join(missing)} with filter 'none')")
            continue
        n_samples = (data.get("n-samples") or {}).get(task, {})
        n = n_samples.get("effective") if isinstance(n_samples, dict) else None
        metrics = []
        for name in names:
            scale = 1.0 if name in PERPLEXITIES else 100.0
            value = _finite(path, task, f"{name},none", numbers[f"{name},none"])
            stderr = _finite(path, task, f"{name}_stderr,none", numbers.get(f"{name}_stderr,none"))
            metrics.append({"label": label, "model": spec, "metric": name, "value": value * scale,
                            "stderr": None if stderr is None else stderr * scale, "n": n,
                            "higher_is_better": name not in PERPLEXITIES, "is_primary": name == primary})
        settings = {"num_fewshot": (data.get("n-shot") or {}).get(task), "task_version": versions["task_versions"].get(task),
                    "metrics": list(names), "primary": primary, "n_samples": n, "limit": config.get("limit"),
                    "source": SOURCE, "task_hash": (data.get("task_hashes") or {}).get(task)}
        key = stable_hash({"source": SOURCE, "weights": weights, "model_args": model_config.get("model_args"),
                           "task": task, "settings": settings, "samples": n_samples})
        unit = {"suite": "lm", "task": task, "context_length": int(data.get("max_length") or LM_CONTEXT),
                "unit_key": key, "status": "complete", "started": started, "finished": started,
                "dataset_fingerprint": settings["task_hash"], "settings": settings}
        units.append((unit, metrics, _samples(path, task, primary)))
    return run, units, left_out


def results_files(path: Path) -> list[Path]:
    """A results file, or every results_*.json under a folder lm-eval wrote into."""
    if path.is_dir():
        found = sorted(path.rglob("results_*.json"))
        if not found:
            raise LmEvalResultsError(f"{path}: no results_*.json under it; pass lm-eval's --output_path folder or a "
                                     "results file")
        return found
    return [path]


# --- out ----------------------------------------------------------------------------------------------

def _sanitized(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "__", name).strip("_") or "model"


def export_run(store, run_id: str, out: Path) -> list[Path]:
    """Write run ``run_id`` of ``store`` in lm-eval's layout under ``out/<model>/``; the written paths."""
    rows = store.query("SELECT * FROM runs WHERE id = ?", (run_id,))
    if not rows:
        raise BadInput(f"run {run_id!r}: no such run in {store.path} (see ccq-eval runs)")
    run = dict(rows[0])
    versions = json.loads(run["versions"])
    seeds = json.loads(run["seeds"])
    units = [dict(u) for u in store.query("SELECT * FROM units WHERE run_id = ? AND status = 'complete' "
                                          "ORDER BY rowid", (run_id,))]
    if not units:
        raise BadInput(f"run {run_id!r}: no complete unit to export")
    results, task_versions, n_shot, better, n_samples, samples = {}, {}, {}, {}, {}, {}
    for unit in units:
        settings = json.loads(unit["settings"])
        task = unit["task"]
        entry = results.setdefault(task, {"alias": task})
        count = None
        for m in store.query("SELECT * FROM metrics WHERE unit_id = ?", (unit["id"],)):
            scale = 1.0 if unit["suite"] != "lm" or not m["higher_is_better"] else 100.0
            value = m["value"] / scale
            stderr = "N/A" if m["stderr"] is None else m["stderr"] / scale
            name = m["metric"] if unit["suite"] == "lm" else f"{m['metric']}@{unit['context_length']}"
            entry[f"{name},none"], entry[f"{name}_stderr,none"] = value, stderr
            if unit["suite"] != "lm" and m["is_primary"]:
                entry[f"{unit['context_length']},none"] = value  # lm-eval's RULER tasks name a length's score so
            better.setdefault(task, {})[name] = bool(m["higher_is_better"])
            count = m["n"]
        task_versions[task] = settings.get("task_version")
        n_shot[task] = settings.get("num_fewshot", 0)
        previous = n_samples.get(task, {"original": 0, "effective": 0})
        n_samples[task] = {"original": previous["original"] + (count or 0), "effective": previous["effective"] + (count or 0)}
        samples.setdefault(task, []).extend(
            {"doc_id": s["idx"], "context_length": unit["context_length"], "target": s["target"],
             "filtered_resps": [s["prediction"]], "prompt_hash": s["prompt_sha256"], "score": s["score"],
             **json.loads(s["fields"])}
            for s in store.query("SELECT * FROM samples WHERE unit_id = ? ORDER BY idx", (unit["id"],)))
    started = datetime.fromisoformat(run["started"])
    stamp = started.strftime("%Y-%m-%dT%H-%M-%S.%f")
    document = {
        "results": results, "group_subtasks": {}, "configs": {t: {"task": t, "metadata": {"version": v}}
                                                              for t, v in task_versions.items()},
        "versions": task_versions, "n-shot": n_shot, "higher_is_better": better, "n-samples": n_samples,
        "config": {"model": "ccq-eval", "model_args": {"pretrained": run["model_spec"], "label": run["label"]},
                   "model_dtype": run["dtype"], "batch_size": run["batch_size"], "device": run["device"],
                   "random_seed": seeds.get("seed", seeds.get("random_seed")), "ccq_eval_run": run_id,
                   "weights_sha256": run["weights_sha256"], "ccq_overrides": json.loads(run["ccq_overrides"])},
        "git_hash": run["git_sha"], "date": started.timestamp(), "lm_eval_version": versions.get("lm_eval"),
        "transformers_version": versions.get("transformers"), "model_name": run["model_spec"],
        "model_name_sanitized": _sanitized(run["model_spec"]), "task_hashes": {}, "model_source": "ccq-eval",
    }
    folder = out / _sanitized(run["model_spec"])
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / f"results_{stamp}.json"]
    written[0].write_text(json.dumps(document, indent=2, default=str))
    for task, rows in samples.items():
        if rows:
            path = folder / f"samples_{task}_{stamp}.jsonl"
            path.write_text("".join(json.dumps(r, default=str) + "\n" for r in rows))
            written.append(path)
    return written

