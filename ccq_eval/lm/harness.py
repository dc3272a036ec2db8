"""The one call into lm-eval: ``simple_evaluate`` through its public API, on one of lm-eval's own tasks (the lm
suite: a config dict from lm-eval's YAML, its records read offline) or one of our plugins by name (tasks/, installed as
ccq_eval.tasks; the same files stock lm-eval users point --include_path at), which builds its data from the metadata
given, as under stock lm-eval. The generating suites do not come here: they call the model's engine themselves
(suites/generating.py).
"""

from __future__ import annotations

import logging
from functools import lru_cache

from ccq_eval.lm.adapter import ModelAdapter
from ccq_eval.scoped_env import scoped_environ
from ccq_eval.task_plugins import TASKS_DIR


@lru_cache(maxsize=1)
def builtin_tasks():
    """lm-eval's own task index (the lm suite's tasks)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def plugin_tasks(metadata: dict):
    """Our plugins' index (tasks/), each task given ``metadata`` (what its dataset function reads)."""
    from lm_eval.tasks import TaskManager

    return TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)


def evaluate(lm: ModelAdapter, task: dict | str, seed: int, max_length: int, limit: int | None = None,
             num_fewshot: int | None = None, bootstrap_iters: int = 0, metadata: dict | None = None) -> dict | None:
    """simple_evaluate on one task: one of lm-eval's own as a config dict, or a plugin's name with the ``metadata``
    its data is built from; under the context budget ``max_length`` (what the unit records). None on a data-parallel
    rank other than 0 (rank 0 gathers its share)."""
    import lm_eval

    for name in ("lm_eval", "lm_eval.api.task", "lm_eval.evaluator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    manager = plugin_tasks(metadata or {}) if isinstance(task, str) else builtin_tasks()
    # lm-eval's bootstrapped stderr forks a pool of cpu_count processes for iters // 1000 chunks: one chunk at the
    # 1000 iterations used here, so nothing runs in parallel, and a fork of a process with threads (torch's, a
    # test runner's) can deadlock in the child. Its own switch, DISABLE_MULTIPROC, computes the same chunks with
    # the same seeds in process (the same numbers).
    with lm.budget(max_length), scoped_environ(DISABLE_MULTIPROC="1"):  # see above
        return lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=manager, log_samples=True, limit=limit,
                                       num_fewshot=num_fewshot, bootstrap_iters=bootstrap_iters, random_seed=seed,
                                       numpy_random_seed=seed, torch_random_seed=seed)


def without_samples(out: dict) -> dict:
    """lm-eval's output minus the logged samples (which the store holds): the raw/ record."""
    return {k: v for k, v in out.items() if k != "samples"}
