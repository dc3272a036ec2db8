"""Where the lm-eval task plugins are: tasks/ in the repository, installed as the package ccq_eval.tasks
(wheel or editable). Stock lm-eval users pass this folder to ``--include_path``."""

from __future__ import annotations

from ccq_eval.mapped_folders import mapped_folder

TASKS_DIR = mapped_folder("ccq_eval.tasks")


def include_path() -> str:
    return str(TASKS_DIR)
