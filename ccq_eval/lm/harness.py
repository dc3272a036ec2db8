"""The one call into lm-eval every suite makes: ``simple_evaluate`` with our TaskManager.

Our plugins (tasks/, installed as ccq_eval.tasks) get their metadata through the TaskManager:
lm-eval merges model_args into task metadata only when it builds the TaskManager itself. lm-eval's
own tasks (the lm suite) go through its default TaskManager, as config dicts.
"""

from __future__ import annotations

import contextlib
import importlib.resources
import logging
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
             num_fewshot: int | None = None, bootstrap_iters: int = 0) -> dict | None:
    """simple_evaluate on one task: a name of our plugins (with ``metadata``), or a config dict of one
    of lm-eval's own tasks, under the context budget ``max_length`` (what the unit records). None on
    a data-parallel rank other than 0 (rank 0 gathers its share)."""
    import lm_eval
    from lm_eval.tasks import TaskManager

    for name in ("lm_eval", "lm_eval.api.task", "lm_eval.evaluator"):
        logging.getLogger(name).setLevel(logging.ERROR)
    if isinstance(task, str):
        manager = TaskManager(include_path=str(TASKS_DIR), include_defaults=False, metadata=metadata)
    else:
        manager = builtin_tasks()
    budget = lm.budget(max_length) if hasattr(lm, "budget") else contextlib.nullcontext()  # scripted test LMs
    with budget:
        return lm_eval.simple_evaluate(model=lm, tasks=[task], task_manager=manager, log_samples=True, limit=limit,
                                       num_fewshot=num_fewshot, bootstrap_iters=bootstrap_iters, random_seed=seed,
                                       numpy_random_seed=seed, torch_random_seed=seed)


def without_samples(out: dict) -> dict:
    """lm-eval's output minus the logged samples (which the store holds): the raw/ record."""
    return {k: v for k, v in out.items() if k != "samples"}
