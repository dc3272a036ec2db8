"""The language-modelling / zero-shot commonsense suite: lm-eval's own tasks, 0-shot, unchanged,
with their data from a local folder (DATA_DIR/lm/<task>.jsonl, the HF records of the split the task
scores) or from the HF datasets cache, read offline: nothing downloads behind the user's back."""

from __future__ import annotations

import contextlib
import json
import os
from functools import lru_cache
from pathlib import Path

from ccq_eval.runner import UnitOutcome, evaluate_each

# task -> (metrics to store, the primary one); accuracies are stored x100
METRICS = {
    "wikitext": (("word_perplexity",), "word_perplexity"),
    "lambada_openai": (("perplexity", "acc"), "acc"),
    "piqa": (("acc", "acc_norm"), "acc"),
    "hellaswag": (("acc", "acc_norm"), "acc_norm"),
    "winogrande": (("acc",), "acc"),
    "arc_easy": (("acc", "acc_norm"), "acc"),
    "arc_challenge": (("acc", "acc_norm"), "acc_norm"),
    "social_iqa": (("acc",), "acc"),
    "boolq": (("acc",), "acc"),
}
PERPLEXITIES = {"word_perplexity", "perplexity"}
CONTEXT = 2048  # lm-eval's window for wikitext's rolling loglikelihood; the other items are short
FETCH_COMMAND = "ccq-eval data fetch lm"


class LmDataError(ValueError):
    """A zero-shot dataset that is not available offline; the message names it and the fix."""


@lru_cache(maxsize=1)
def task_manager():
    from lm_eval.tasks import TaskManager

    return TaskManager()


@lru_cache(maxsize=None)
def task_config(task: str) -> dict:
    """lm-eval's full config for one of its tasks (includes and !function tags resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    return load_yaml(task_manager().task_index[task].yaml_path, resolve_func=True)


def scored_split(config: dict) -> str:
    return config.get("test_split") or config.get("validation_split")


@contextlib.contextmanager
def offline():
    """HF datasets / hub offline for the duration: they read these flags at import time, so the
    module constants are set as well as the environment."""
    import datasets
    import huggingface_hub.constants as hub

    saved_env = {k: os.environ.get(k) for k in ("HF_DATASETS_OFFLINE", "HF_HUB_OFFLINE")}
    saved = (datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE)
    os.environ.update(HF_DATASETS_OFFLINE="1", HF_HUB_OFFLINE="1")
    datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = hub.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        datasets.config.HF_HUB_OFFLINE, datasets.config.HF_DATASETS_OFFLINE, hub.HF_HUB_OFFLINE = saved
        for key, value in saved_env.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def local_file(task: str, data_dir: str | None) -> Path | None:
    path = Path(data_dir) / "lm" / f"{task}.jsonl" if data_dir else None
    return path if path and path.exists() else None


def _cached(task: str) -> bool:
    import datasets

    config = task_config(task)
    try:
        with offline():
            datasets.load_dataset(config["dataset_path"], config.get("dataset_name"), split=scored_split(config))
        return True
    except Exception:  # noqa: BLE001 - any failure to read it offline means "not available"
        return False


def fetch(tasks: list[str] | None = None, progress=print) -> list[str]:
    """Fill the HF datasets cache with each task's dataset (run where the network is reachable)."""
    import datasets

    done = []
    for task in tasks or list(METRICS):
        config = task_config(task)
        progress(f"fetching {task}: {config['dataset_path']} ({config.get('dataset_name')}) split {scored_split(config)}")
        datasets.load_dataset(config["dataset_path"], config.get("dataset_name"), split=scored_split(config))
        done.append(task)
    return done


class LmDriver:
    def __init__(self, runner):
        self.runner = runner

    def check_inputs(self) -> None:
        r = self.runner
        missing = [t for t in r.tasks if local_file(t, r.request.data_dir) is None and not _cached(t)]
        if missing:
            names = ", ".join(f"{t} ({task_config(t)['dataset_path']})" for t in missing)
            raise LmDataError(f"zero-shot datasets not available offline: {names}; run `{FETCH_COMMAND}` on a machine "
                              "with network access, or put <task>.jsonl in --data-dir DIR/lm/")

    def max_length(self) -> int:
        return CONTEXT

    def check_with_tokenizer(self) -> None:
        pass

    def unit_settings(self, task: str, length: int) -> tuple[dict, dict]:
        local = local_file(task, self.runner.request.data_dir)
        source = {"local": str(local), "sha256": _sha256(local)} if local else {
            "hub": task_config(task)["dataset_path"], "name": task_config(task).get("dataset_name")}
        settings = {"max_length": CONTEXT, "num_fewshot": 0, "task_version": task_config(task).get("metadata", {}).get("version"),
                    "metrics": list(METRICS[task][0]), "primary": METRICS[task][1]}
        return settings, {"task": task, "source": source}

    def run_units(self, units):
        return evaluate_each(units, self._evaluate)

    def _evaluate(self, unit) -> UnitOutcome:
        import lm_eval

        r = self.runner
        config = dict(task_config(unit.task))
        local = local_file(unit.task, r.request.data_dir)
        if local is not None:  # the same task, reading the records from the local file
            records = _records_dataset(local)
            # every split the config names gets the local records (0-shot: only the scored one is read)
            splits = {config.get(k) for k in ("training_split", "validation_split", "test_split", "fewshot_split")}
            config["custom_dataset"] = lambda **_: {split: records for split in splits if split}
        seed = r.request.seed
        limit = r.samples
        with offline():
            out = lm_eval.simple_evaluate(model=r.evaluand.lm, tasks=[config], num_fewshot=0, log_samples=True,
                                          task_manager=task_manager(), limit=limit, random_seed=seed,
                                          numpy_random_seed=seed, torch_random_seed=seed, bootstrap_iters=1000)
        if out is None:  # a data-parallel rank other than 0: its share is gathered by rank 0
            return None
        results = out["results"][unit.task]
        names, primary = METRICS[unit.task]
        n = len(out["samples"][unit.task])
        metrics = []
        for name in names:
            value, stderr = results[f"{name},none"], results.get(f"{name}_stderr,none")
            scale = 1.0 if name in PERPLEXITIES else 100.0
            stderr = stderr * scale if isinstance(stderr, (int, float)) else None
            metrics.append(r.metric(name, value * scale, stderr=stderr, n=n, higher_is_better=name not in PERPLEXITIES,
                                    is_primary=name == primary))
        return UnitOutcome(status="complete", metrics=metrics, samples=[], settings={"n_samples": n},
                           fingerprint=_sha256(local) if local else None,
                           raw={k: v for k, v in out.items() if k != "samples"})


def _records_dataset(path: Path):
    import datasets

    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return datasets.Dataset.from_list(records)


def _sha256(path: Path | None) -> str | None:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest() if path else None
