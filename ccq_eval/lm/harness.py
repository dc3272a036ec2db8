"""The one call into lm-eval every suite makes: ``simple_evaluate`` on one task config dict.

A suite hands lm-eval its data in process: the config of one of our plugins (tasks/, installed as
ccq_eval.tasks; the same files stock lm-eval users point --include_path at) with a ``custom_dataset`` that
returns the records the suite built. Nothing goes out through a file path in metadata and comes back. lm-eval's
own tasks (the lm suite) are config dicts too, from lm-eval's own YAMLs.
"""

from __future__ import annotations

import logging
from functools import lru_cache

from ccq_eval.lm.adapter import ModelAdapter
from ccq_eval.scoped_env import scoped_environ
from ccq_eval.task_plugins import TASKS_DIR


@lru_cache(maxsize=1)
def plugin_tasks():
    """The index of our plugins (tasks/)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False)


@lru_cache(maxsize=None)
def plugin_config(task: str) -> dict:
    """One of our plugins' config as lm-eval reads it (includes and !function tags resolved)."""
    from lm_eval.tasks._yaml_loader import load_yaml

    return load_yaml(plugin_tasks().task_index[task].yaml_path, resolve_func=True)


def with_records(config: dict, records: list[dict]) -> dict:
    """The config with these records as its dataset (its test split), handed to lm-eval in process."""
    import datasets

    dataset = datasets.Dataset.from_list(records)
    return {**config, "custom_dataset": lambda **_: {config.get("test_split", "test"): dataset}}


@lru_cache(maxsize=1)
def builtin_tasks():
    """lm-eval's own task index (the lm suite's tasks)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def evaluate(lm: ModelAdapter, config: dict, seed: int, max_length: int, limit: int | None = None, num_fewshot: int | None = None,
             bootstrap_iters: int = 0, hooks=None) -> dict | None:
    """simple_evaluate on one task config dict (``with_records(plugin_config(task), records)``, or one of
    lm-eval's own tasks), under the context budget ``max_length`` (what the unit records), with this
    evaluation's decoding hooks (lm/decoding.py). None on a data-parallel rank other than 0 (rank 0 gathers
    its share)."""
    import lm_eval

    for name in ("lm_eval", "lm_eval.api.task", "lm_eval.evaluator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    manager = plugin_tasks() if config.get("task") in plugin_tasks().task_index else builtin_tasks()
    # lm-eval's bootstrapped stderr forks a pool of cpu_count processes for iters // 1000 chunks: one chunk at the
    # 1000 iterations used here, so nothing runs in parallel, and a fork of a process with threads (torch's, a
    # test runner's) can deadlock in the child. Its own switch, DISABLE_MULTIPROC, computes the same chunks with
    # the same seeds in process (the same numbers).
    with lm.budget(max_length), lm.decoding(hooks), scoped_environ(DISABLE_MULTIPROC="1"):  # see above
        return lm_eval.simple_evaluate(model=lm, tasks=[config], task_manager=manager, log_samples=True, limit=limit,
                                       num_fewshot=num_fewshot, bootstrap_iters=bootstrap_iters, random_seed=seed,
                                       numpy_random_seed=seed, torch_random_seed=seed)


def without_samples(out: dict) -> dict:
    """lm-eval's output minus the logged samples (which the store holds): the raw/ record."""
    return {k: v for k, v in out.items() if k != "samples"}
