"""The lm suite's tasks and their data: lm-eval's own task configs, read offline from a local folder
(DATA_DIR/lm/<task>.jsonl, the HF records of the split the task scores) or the HF datasets cache;
``ccq-eval data fetch lm`` fills that cache where the network is reachable."""

from __future__ import annotations

import hashlib
from functools import lru_cache
from pathlib import Path

from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.data.offline import offline
from ccq_eval.errors import BadInput

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
FETCH_COMMAND = "ccq-eval data fetch lm"


class LmDataError(BadInput):
    """A zero-shot dataset that is not available offline; the message names it and the fix."""


@lru_cache(maxsize=None)
def task_config(task: str) -> dict:
    """lm-eval's full config for one of its tasks (includes and !function tags resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    from ccq_eval.lm.harness import builtin_tasks

    return load_yaml(builtin_tasks().task_index[task].yaml_path, resolve_func=True)


def scored_split(config: dict) -> str:
    return config.get("test_split") or config.get("validation_split")


def local_file(task: str, data_dir: str | None) -> Path | None:
    path = Path(data_dir) / "lm" / f"{task}.jsonl" if data_dir else None
    return path if path and path.exists() else None


def cached(task: str) -> bool:
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
        try:
            datasets.load_dataset(config["dataset_path"], config.get("dataset_name"), split=scored_split(config))
        except RuntimeError as exc:  # datasets >= 4 refuses loading scripts; lm-eval's config names the repository
            if "scripts are no longer supported" not in str(exc):
                raise
            raise LmDataError(f"{task}: {config['dataset_path']} is a loading-script dataset, which datasets "
                              f"{datasets.__version__} refuses; put its records in DATA_DIR/lm/{task}.jsonl "
                              "and pass --data-dir") from exc
        done.append(task)
    return done


def read_local(path: Path) -> list[dict]:
    """A local task file's records, every line checked (one JSON object each) before any is used."""
    records = []
    for number, record in read_jsonl(path, LmDataError, "zero-shot data file")[0]:
        if not isinstance(record, dict):
            raise LmDataError(f"zero-shot data file {str(path)!r}: line {number} is not a JSON object; expected the "
                              "HF records of the task's scored split, one object per line")
        records.append(record)
    if not records:
        raise LmDataError(f"zero-shot data file {str(path)!r}: no records")
    return records


def records_dataset(path: Path):
    import datasets

    return datasets.Dataset.from_list(read_local(path))


def sha256(path: Path | None) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path else None
