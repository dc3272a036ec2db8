"""The one call into lm-eval every suite makes: ``simple_evaluate`` with our TaskManager.

Our plugins (tasks/, installed as ccq_eval.tasks) get their metadata through the TaskManager:
lm-eval merges model_args into task metadata only when it builds the TaskManager itself. lm-eval's
own tasks (the lm suite) go through its default TaskManager, as config dicts.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
import os
from functools import lru_cache
from pathlib import Path

# the plugins: tasks/ in the repository, installed as the package ccq_eval.tasks (wheel or editable)
TASKS_DIR = Path(str(importlib.resources.files("ccq_eval.tasks")))


@lru_cache(maxsize=1)
def builtin_tasks():
    """lm-eval's own task index (the lm suite's tasks)."""
    from lm_eval.tasks import TaskManager

    return TaskManager()


def evaluate(lm, task, seed: int, max_length: int, metadata: dict | None = None, limit: int | None = None,
             num_fewshot: int | None = None, bootstrap_iters: int = 0, hooks=None) -> dict | None:
    """simple_evaluate on one task: a name of our plugins (with ``metadata``), or a config dict of one
    of lm-eval's own tasks, under the context budget ``max_length`` (what the unit records), with this
    evaluation's decoding hooks (lm/decoding.py). None on a data-parallel rank other than 0 (rank 0 gathers
    its share)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    for name in ("lm_eval", "lm_eval.api.task", "lm_eval.evaluator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if isinstance(task, str):
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
    else:
        manager = builtin_tasks()
    scripted = not hasattr(lm, "budget")  # the tests' scripted LMs decode nothing
    with (contextlib.nullcontext() if scripted else lm.budget(max_length)), \
            (contextlib.nullcontext() if scripted else lm.decoding(hooks)), _bootstrap_in_process():
        return lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=manager, log_samples=True, limit=limit,
                                       num_fewshot=num_fewshot, bootstrap_iters=bootstrap_iters, random_seed=seed,
                                       numpy_random_seed=seed, torch_random_seed=seed)


@contextlib.contextmanager
def _bootstrap_in_process():
    """lm-eval's bootstrapped stderr forks a pool of cpu_count processes for iters // 1000 chunks: one chunk at
    the 1000 iterations used here, so nothing runs in parallel, and a fork of a process with threads (torch's,
    a test runner's) can deadlock in the child. Its own switch, DISABLE_MULTIPROC, computes the same chunks
    with the same seeds in process (the same numbers), for this call only."""
    saved = os.environ.get("DISABLE_MULTIPROC")
    os.environ["DISABLE_MULTIPROC"] = "1"
    try:
        yield
    finally:
        if saved is None:
            os.environ.pop("DISABLE_MULTIPROC", None)
        else:
            os.environ["DISABLE_MULTIPROC"] = saved


def without_samples(out: dict) -> dict:
    """lm-eval's output minus the logged samples (which the store holds): the raw/ record."""
    return {k: v for k, v in out.items() if k != "samples"}
