"""One lm-eval results file as read for ingest: the JSON checked to be lm-eval's, the model it names identified
as ccq-eval's own runs identify it, the run record from lm-eval's provenance, and the per-task pieces a suite
turns into units (numbers checked finite, the --log_samples records beside the file)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from ccq_eval.errors import BadInput

SOURCE = "lm-eval results JSON"


class LmEvalResultsError(BadInput):
    """A results file that cannot be read as lm-eval's; the message names it and what is wrong."""


class Refused(str):
    """Why one result of a readable file is not stored (a cut prompt, an impossible value): ingest names it, stores
    the rest, and exits 1."""


def load_json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise LmEvalResultsError(f"{path}: not readable as JSON ({str(exc).splitlines()[0][:120]}); pass the "
                                 "results_<date>.json lm-eval wrote") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict) or not isinstance(data.get("config"), dict):
        raise LmEvalResultsError(f"{path}: no 'results' and 'config' objects: not an lm-eval results file "
                                 "(lm-eval --output_path writes results_<date>.json)")
    return data


def model_identity(config: dict) -> tuple[str, str, dict]:
    """(model spec, weights identity, model config): a local checkpoint folder is identified by its weights'
    sha256 and config.json, as ccq-eval's own runs identify it; anything else by lm-eval's model name and sha."""
    from ccq_eval.models.loading import ModelLoadError, weight_files, weights_sha256

    args = config.get("model_args") or {}
    if isinstance(args, str):  # older lm-eval versions store the --model_args string
        args = dict(part.split("=", 1) for part in args.split(",") if "=" in part)
    spec = str(args.get("pretrained") or config.get("model_name") or config.get("model") or "")
    folder = Path(spec) if spec else None
    if folder is not None and folder.is_dir() and (folder / "config.json").is_file():
        try:  # the files, in the order, that a ccq-eval run of this folder hashes (shards by their index)
            weights = weight_files(folder, allow_pickle=False)
        except ModelLoadError:
            weights = []
        if weights:
            return spec, weights_sha256(weights), json.loads((folder / "config.json").read_text())
    revision = config.get("model_sha") or args.get("revision") or config.get("model_revision") or "unknown"
    return spec, f"{SOURCE}: {spec}@{revision}", {"lm_eval_model": config.get("model"), "model_args": args}


def _started(path: Path, data: dict) -> str:
    stamp = data.get("date")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        try:
            return datetime.fromtimestamp(float(stamp), timezone.utc).isoformat()
        except (OverflowError, OSError, ValueError):
            raise LmEvalResultsError(f"{path}: date {stamp!r} is not a time lm-eval could have written; the file is "
                                     "damaged") from None
    return datetime.now(timezone.utc).isoformat()


def _recorded_max_length(path: Path, data: dict) -> int | None:
    """The context budget lm-eval ran the model with (``max_length``, written by lm-eval beside the tokenizer
    facts); None when the file does not say."""
    value = data.get("max_length")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise LmEvalResultsError(f"{path}: max_length {value!r} is not a token count; the file is damaged or not "
                                 "lm-eval's")
    return value


def _check_shapes(path: Path, data: dict) -> None:
    """The objects ingest reads by key are objects (or absent), so a damaged file is one line, not a traceback."""
    for key in ("versions", "n-samples", "configs", "task_hashes", "n-shot", "group_subtasks"):
        if key in data and not isinstance(data[key], dict):
            raise LmEvalResultsError(f"{path}: {key!r} is {type(data[key]).__name__}, not an object; the file is "
                                     "damaged or not lm-eval's")
    if not isinstance(data["config"].get("model_args") or {}, (dict, str)):
        raise LmEvalResultsError(f"{path}: config.model_args is neither an object nor a string; the file is damaged")
    for task, numbers in data["results"].items():
        if not isinstance(numbers, dict):
            raise LmEvalResultsError(f"{path}: results[{task!r}] is not an object; the file is damaged")


@dataclass
class Results:
    """A checked results file and the run it becomes."""

    path: Path
    data: dict
    run: dict  # the run record: label, model spec, weights identity, lm-eval's provenance
    max_length: int | None = None  # the context lm-eval gave the model, when the file records it
    _logged: dict = field(default_factory=dict, repr=False)  # task -> its samples file, parsed once

    @property
    def label(self) -> str:
        return self.run["label"]

    @property
    def tasks(self) -> list[str]:
        """The tasks it reports, groups left out (their subtasks are reported one by one)."""
        groups = set(self.data.get("group_subtasks") or {})
        return [task for task in self.data["results"] if task not in groups]

    def numbers(self, task: str) -> dict:
        return self.data["results"][task]

    def finite(self, task: str, key: str) -> float | None:
        """``results[task][key]`` as a float (None when absent or "N/A"); anything else is a damaged file."""
        value = self.numbers(task).get(key)
        if value is None or value == "N/A":
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise LmEvalResultsError(f"{self.path}: {task} {key} = {value!r} is not a finite number; the file is "
                                     "damaged or not lm-eval's")
        return float(value)

    def n_samples(self, task: str) -> tuple[dict, int | None]:
        """(lm-eval's n-samples entry, the effective count)."""
        entry = (self.data.get("n-samples") or {}).get(task, {})
        return entry, entry.get("effective") if isinstance(entry, dict) else None

    def length_numbers(self, task: str) -> dict[int, float]:
        """A plugin task's per-length results (``"<L>,none"``, lm-eval's RULER naming), lengths its run did not ask
        for (RULER's -1) left out."""
        found = {}
        for key in self.numbers(task):
            length, _, filter_name = key.partition(",")
            if length.isdigit() and filter_name == "none" and (value := self.finite(task, key)) is not None:
                if value != -1:
                    found[int(length)] = value
        return found

    def sample_records(self, task: str, length: int | None = None) -> list[tuple[int, dict]]:
        """(line number, record) of the --log_samples file of ``task`` beside the results file (same date suffix);
        with ``length``, those of documents of that length (their ``max_length``)."""
        if task not in self._logged:
            self._logged[task] = self._read_samples(task)
        return [(n, r) for n, r in self._logged[task] if length is None or r.get("doc", {}).get("max_length") == length]

    def _read_samples(self, task: str) -> list[tuple[int, dict]]:
        """Every record of the task's samples file; a line that is not a JSON object is a damaged file."""
        found = self.path.parent / f"samples_{task}_{self.path.stem.removeprefix('results_')}.jsonl"
        if not found.is_file():
            return []
        records = []
        for number, line in enumerate(found.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                raise LmEvalResultsError(f"{found}: line {number} is not JSON; the samples file is damaged") from None
            if not isinstance(record, dict) or not isinstance(record.get("doc", {}), dict):
                raise LmEvalResultsError(f"{found}: line {number} is not a sample object; the samples file is damaged")
            records.append((number, record))
        return records

    def samples(self, task: str, primary: str, length: int | None = None) -> list[dict]:
        """The logged samples of ``task`` (of documents of ``length``) as sample rows."""
        found = f"samples_{task}_{self.path.stem.removeprefix('results_')}.jsonl"
        rows = []
        for number, record in self.sample_records(task, length):
            doc_id = record.get("doc_id", number - 1)
            if isinstance(doc_id, bool) or not isinstance(doc_id, int):
                raise LmEvalResultsError(f"{found}: line {number}: doc_id {doc_id!r} is not an integer; the samples "
                                         "file is damaged")
            score = record.get(primary)
            row = {"idx": doc_id, "prompt_sha256": record.get("prompt_hash"),
                   "target": None if record.get("target") is None else str(record["target"]),
                   "prediction": json.dumps(record.get("filtered_resps"))[:2000],
                   "score": float(score) if isinstance(score, (int, float)) else None,
                   "fields": {k: record[k] for k in ("doc_hash", "target_hash", *record.get("metrics", []))
                              if k in record}}
            try:  # a lone surrogate cannot be stored (or shown) as text
                json.dumps(row, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                raise LmEvalResultsError(f"{found}: line {number} holds text that is not valid Unicode (a lone "
                                         "surrogate); the samples file is damaged") from None
            rows.append(row)
        return rows


# What a per-length metric of a length suite can be: a score is a percentage, a token perplexity exp(mean NLL) >= 1
VALID_RANGE = {"score": (0.0, 100.0), "perplexity": (1.0, math.inf)}


def _doc_tokens(record: dict) -> int | None:
    """The tokens one logged document takes in the model's context (prompt + generation, or the scored tokens), as
    the plugin that built it counted them with the model's tokenizer: S-NIAH's ``length``, LongBench's
    ``prompt_tokens`` plus the generation budget, perplexity's ``n_tokens``."""
    doc = record.get("doc") or {}
    if isinstance(doc.get("length"), int):
        return doc["length"]
    if isinstance(doc.get("n_tokens"), int):
        return doc["n_tokens"]
    arguments = record.get("arguments")
    budget = None
    if isinstance(arguments, dict):  # lm-eval logs {"gen_args_0": {"arg_0": prompt, "arg_1": generation kwargs}}
        kwargs = next(iter(arguments.values()), {}).get("arg_1") if arguments else None
        budget = kwargs.get("max_gen_toks") if isinstance(kwargs, dict) else None
    if isinstance(doc.get("prompt_tokens"), int) and isinstance(budget, int):
        return doc["prompt_tokens"] + budget
    return None


def untrusted(task: str, length: int, value: float, metric: str, results: Results) -> str | None:
    """Why one per-length result cannot be stored (its prompts were, or may have been, cut; a value no such metric
    can take), or None."""
    if results.max_length is None:
        return (f"{task} at {length}: the results record no max_length, so whether lm-eval cut its prompts cannot be "
                "told; rerun through `ccq-eval lm-eval`")
    if length > results.max_length:
        return (f"{task} at {length}: needs {length} tokens (prompt + generation) but lm-eval ran the model with "
                f"max_length {results.max_length}, so it cut the prompts; rerun with --model_args max_length={length}")
    for number, record in results.sample_records(task, length):
        tokens = _doc_tokens(record)
        if tokens is not None and tokens > results.max_length:
            return (f"{task} at {length}: the logged sample on line {number} takes {tokens} tokens, more than "
                    f"max_length {results.max_length}: lm-eval cut it")
    low, high = VALID_RANGE.get(metric, (-math.inf, math.inf))
    if not low <= value <= high:
        return f"{task} at {length}: {metric} {value!r} is outside [{low}, {high}]; the file is damaged"
    return None


def length_units(suite: str, task: str, results: Results, metric: str, higher_is_better: bool) -> list[tuple | Refused] | str:
    """One unit per length of a length suite's plugin task (S-NIAH, perplexity, LongBench): its ``"<L>,none"``
    number as the primary metric at context length L, with the samples of that length when they were logged; a
    length whose result cannot be trusted (``untrusted``) as the reason it is refused, and nothing written for it."""
    from ccq_eval.data.cache import stable_hash

    numbers = results.length_numbers(task)
    if not numbers:
        return "no per-length results (\"<L>,none\"): run with this ccq-eval's task plugins"
    data, run = results.data, results.run
    units = []
    for length, value in sorted(numbers.items()):
        if (why := untrusted(task, length, value, metric, results)) is not None:
            units.append(Refused(why))
            continue
        samples = results.samples(task, str(length), length)
        stderr = results.finite(task, f"{length}_stderr,none")
        settings = {"task_version": run["versions"]["task_versions"].get(task), "source": SOURCE, "metric": metric,
                    "limit": data["config"].get("limit"), "task_hash": (data.get("task_hashes") or {}).get(task),
                    "n_samples": len(samples) or None}
        key = stable_hash({"source": SOURCE, "weights": run["weights_sha256"], "task": task, "length": length,
                           "model_args": run["model_config"].get("model_args"), "settings": settings,
                           "samples": (data.get("n-samples") or {}).get(task)})
        unit = {"suite": suite, "task": task, "context_length": length, "unit_key": key, "status": "complete",
                "started": run["started"], "finished": run["started"], "dataset_fingerprint": settings["task_hash"],
                "settings": settings}
        row = {"label": results.label, "model": run["model_spec"], "metric": metric, "value": value,
               "stderr": stderr, "n": len(samples) or None, "higher_is_better": higher_is_better, "is_primary": True}
        units.append((unit, [row], samples))
    return units


def _ended(config: dict) -> str:
    """How the run ended: a ccq-eval export says (an interrupted, failed or running run stays so); lm-eval's own
    results files are written when a run completes."""
    status = config.get("ccq_eval_status")
    return status if status in ("interrupted", "failed", "running") else "complete"


def read_document(path: Path, label: str | None = None) -> Results:
    """The file checked, and the run record it gives (``label``: default the checkpoint folder's name)."""
    data = load_json(path)
    _check_shapes(path, data)
    config = data["config"]
    spec, weights, model_config = model_identity(config)
    if not spec:
        raise LmEvalResultsError(f"{path}: config names no model (model_args.pretrained / model_name)")
    versions = {"lm_eval": data.get("lm_eval_version"), "transformers": data.get("transformers_version"),
                "task_versions": data.get("versions", {}), "source": SOURCE, "lm_eval_model": config.get("model"),
                "model_args": config.get("model_args"), "results_file": path.name}
    if isinstance(config.get("ccq_eval_shard"), dict):  # one shard of a ccq-eval job, exported
        versions["shard"] = config["ccq_eval_shard"]
    batch = str(config.get("batch_size", ""))
    run = {"label": label or Path(spec.rstrip("/")).name, "model_spec": spec, "weights_sha256": weights,
           "model_config": model_config, "ccq_overrides": {},
           "dtype": str(config.get("model_dtype") or "").replace("torch.", "") or "unknown",
           "device": str(config.get("device") or "unknown"), "batch_size": int(batch) if batch.isdigit() else 0,
           "seeds": {k: config.get(k) for k in ("random_seed", "numpy_seed", "torch_seed", "fewshot_seed")},
           "command_line": f"lm-eval ({path.name})", "versions": versions, "git_sha": data.get("git_hash"),
           "started": _started(path, data), "status": _ended(config)}
    return Results(path, data, run, _recorded_max_length(path, data))
