"""Where the lm-eval task plugins are: tasks/ in the repository, installed as the package ccq_eval.tasks
(wheel or editable). Stock lm-eval users pass this folder to ``--include_path``."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

TASKS_DIR = Path(str(importlib.resources.files("ccq_eval.tasks")))


def include_path() -> str:
    return str(TASKS_DIR)
