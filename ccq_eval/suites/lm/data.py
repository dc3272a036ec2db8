"""The lm suite's tasks and their data: lm-eval's own task configs, read offline from a local folder
(DATA_DIR/lm/<task>.jsonl, the HF records of the split the task scores) or the HF datasets cache;
``ccq-eval data fetch lm`` fills that cache where the network is reachable."""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

from ccq_eval.data.cache import file_sha256
from ccq_eval.data import local
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
    # Based / JRT's real-world recall (lm-eval's own Python tasks; not the paper's, so not run by default)
    "swde": (("contains",), "contains"),
    "fda": (("contains",), "contains"),
    "squad_completion": (("contains",), "contains"),
}
PERPLEXITIES = {"word_perplexity", "perplexity"}
FETCH_COMMAND = "ccq-eval data fetch lm"


class LmDataError(BadInput):
    """A zero-shot dataset that is not available offline; the message names it and the fix."""


@lru_cache(maxsize=None)
def task_config(task: str) -> dict:
    """lm-eval's full config for one of its tasks (includes and !function tags resolved), from the YAML its task index
    names."""
    from ccq_eval.lm.harness import builtin_tasks
    from ccq_eval.lm.task_yaml import read_task_yaml

    return read_task_yaml(builtin_tasks().task_index[task].yaml_path)


def scored_split(config: dict) -> str:
    if "class" in config:  # a Python task (swde, fda, squad_completion): its class scores validation_docs()
        return "validation"
    return config.get("test_split") or config.get("validation_split")


def dataset_of(task: str) -> tuple[str, str | None, str]:
    """(HF dataset, its config name, the scored split) of a task: from its YAML, or a Python task's class."""
    config = task_config(task)
    if "class" in config:
        return config["class"].DATASET_PATH, getattr(config["class"], "DATASET_NAME", None), scored_split(config)
    return config["dataset_path"], config.get("dataset_name"), scored_split(config)


def with_records(task: str, records) -> dict:
    """The task's config reading ``records`` (a datasets.Dataset) as its scored split: a YAML task through
    lm-eval's custom_dataset, a Python task (whose class sets its own config) through a subclass that loads them."""
    config = dict(task_config(task))
    if "class" not in config:
        config["custom_dataset"] = lambda **_: {split: records for split in splits_named(config)}
        return config
    base = config["class"]

    class LocalRecords(base):
        def download(self, *args, **kwargs):
            self.dataset = {"validation": records}

    LocalRecords.__name__ = LocalRecords.__qualname__ = base.__name__
    return {**config, "class": LocalRecords}


def local_file(task: str, data_dir: str | None) -> Path | None:
    """DATA_DIR/lm/<task>.jsonl (or .json, .jsonl.gz, .json.gz: data/jsonl.py), where it exists (data/local.py: a
    broken link, or two files for the task, refused)."""
    return local.users_file("lm", task, data_dir)


def cached(task: str) -> bool:
    import datasets

    path, name, split = dataset_of(task)
    try:
        with offline():
            datasets.load_dataset(path, name, split=split)
        return True
    except Exception:  # noqa: BLE001 - any failure to read it offline means "not available"
        return False


def fetch(tasks: list[str] | None = None, progress=print) -> list[str]:
    """Fill the HF datasets cache with each task's dataset (run where the network is reachable)."""
    import datasets

    done = []
    for task in tasks or list(METRICS):
        path, name, split = dataset_of(task)
        progress(f"fetching {task}: {path} ({name}) split {split}")
        try:
            datasets.load_dataset(path, name, split=split)
        except RuntimeError as exc:  # datasets >= 4 refuses loading scripts; lm-eval's config names the repository
            if "scripts are no longer supported" not in str(exc):
                raise
            raise LmDataError(f"{task}: {path} is a loading-script dataset, which datasets "
                              f"{datasets.__version__} refuses; put its records in DATA_DIR/lm/{task}.jsonl "
                              "and pass --data-dir") from exc
        done.append(task)
    return done


def read_local(path: Path) -> list[dict]:
    """A local task file's records, every line checked (one JSON object each) before any is used."""
    records, fields = [], None
    for number, record in read_jsonl(path, LmDataError, "zero-shot data file")[0]:
        if not isinstance(record, dict):
            raise LmDataError(f"zero-shot data file {str(path)!r}: line {number} is not a JSON object; expected the "
                              "HF records of the task's scored split, one object per line")
        if fields is None:
            fields = set(record)
        elif set(record) != fields:  # datasets would fill the gap with None, and the task would read it as data
            odd = sorted(fields ^ set(record))
            raise LmDataError(f"zero-shot data file {str(path)!r}: line {number} has other fields than the first line "
                              f"({', '.join(odd)}); every record needs the fields of the task's scored split")
        records.append(record)
    if not records:
        raise LmDataError(f"zero-shot data file {str(path)!r}: no records")
    return records


def check_records(task: str, path: Path) -> None:
    """Every local record read as lm-eval's task reads it (its prompt, target and choices), before the model
    loads: a record lacking a field the task needs is refused here, not found by every unit failing."""
    from datasets import utils as datasets_tqdm
    from lm_eval.api.task import ConfigurableTask

    records = records_dataset(path)
    config = with_records(task, records)
    where = f"zero-shot data file {str(path)!r} (fields {', '.join(sorted(records.column_names))})"
    quiet = not datasets_tqdm.are_progress_bars_disabled()
    if quiet:  # the task maps the records once; its progress bar would print above the one error line
        datasets_tqdm.disable_progress_bars()
    task_log = logging.getLogger("lm_eval.api.task")  # its notice on custom datasets: two more lines
    level = task_log.level
    task_log.setLevel(logging.ERROR)
    try:
        built = config["class"]() if "class" in config else ConfigurableTask(config=config)
    except Exception as exc:  # noqa: BLE001 - lm-eval's processing raises whatever the records provoke
        raise LmDataError(f"{where}: lm-eval's {task} task cannot read it ({_one_line(exc)}); expected the HF "
                          "records of its scored split") from exc
    finally:
        task_log.setLevel(level)
        if quiet:
            datasets_tqdm.enable_progress_bars()
    readers = [built.doc_to_text, built.doc_to_target]
    if built.OUTPUT_TYPE == "multiple_choice":
        readers.append(built.doc_to_choice)
    for index, doc in enumerate(built.eval_docs, start=1):
        try:
            for read in readers:
                read(doc)
        except Exception as exc:  # noqa: BLE001 - a missing field surfaces as KeyError, jinja's UndefinedError, ...
            raise LmDataError(f"{where}: record {index} cannot be read by lm-eval's {task} task ({_one_line(exc)}); "
                              "expected the HF records of its scored split") from exc


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{exc.__class__.__name__}: {text[0][:120]}" if text else exc.__class__.__name__


def splits_named(config: dict) -> set[str]:
    """Every split the config names (0-shot: only the scored one is read; the local records serve each)."""
    return {split for key in ("training_split", "validation_split", "test_split", "fewshot_split")
            if (split := config.get(key))}


def records_dataset(path: Path):
    import datasets

    return datasets.Dataset.from_list(read_local(path))


def sha256(path: Path | None) -> str | None:
    return file_sha256(path) if path else None
