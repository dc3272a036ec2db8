"""The folders that ship inside the package under other names (pyproject.toml's package-dir): tasks/ as
ccq_eval.tasks, results/reference as ccq_eval.reference. Installed (a wheel or editable) they are packages; in a
source tree put on the path by hand (PYTHONPATH=<checkout>, the benchmarks) they are read where they lie."""

from __future__ import annotations

import importlib.resources
from pathlib import Path

IN_SOURCE_TREE = {"ccq_eval.tasks": "tasks", "ccq_eval.reference": "results/reference"}


def mapped_folder(package: str) -> Path:
    try:
        return Path(str(importlib.resources.files(package)))
    except ModuleNotFoundError:
        return Path(__file__).resolve().parent.parent / IN_SOURCE_TREE[package]
