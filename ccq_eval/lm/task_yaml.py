"""lm-eval's task YAML files read as lm-eval documents them (its task guide): ``include`` merges other files under the
including file's keys, and ``!function module.name`` is ``name`` in the Python file ``module.py`` beside the YAML (else
an importable module). lm-eval's own reader is private (it moved and was renamed across releases); the file format is
its public contract, so ccq-eval reads lm-eval's task configs through this."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from pathlib import Path

import yaml


def read_task_yaml(path: str | Path) -> dict:
    """The task config of one YAML file, includes merged and functions resolved."""
    return _read(Path(path).expanduser().resolve(), frozenset())


def _read(path: Path, seen: frozenset) -> dict:
    if path in seen:
        raise ValueError(f"{path}: includes itself")
    loader = type("TaskLoader", (yaml.SafeLoader,), {})
    loader.add_constructor("!function", lambda load, node: _function(load.construct_scalar(node), path.parent))
    with path.open("rb") as handle:
        config = yaml.load(handle, Loader=loader)  # noqa: S506 - SafeLoader with one constructor added
    if not isinstance(config, dict):
        raise ValueError(f"{path}: expected a mapping, got {type(config).__name__}")
    includes = config.pop("include", None)
    if includes is None:
        return config
    merged = {}
    for include in includes if isinstance(includes, list) else [includes]:
        included = _read(path.parent / include, seen | {path})
        included.pop("task_list", None)  # the tasks of the included file, not of this one
        merged.update(included)
    return {**merged, **config}


def _function(qualified: str, folder: Path):
    module_name, _, name = qualified.rpartition(".")
    if not module_name:
        raise ValueError(f"!function {qualified!r} (in {folder}): expected module.name")
    beside = folder / f"{module_name.replace('.', '/')}.py"
    module = _module_from_file(beside.resolve()) if beside.exists() else importlib.import_module(module_name)
    return getattr(module, name)


def _module_from_file(path: Path):
    """A task folder's Python file as a module, loaded once; lm-eval's own task folders under their package name."""
    parts = path.with_suffix("").parts
    name = (".".join(parts[parts.index("lm_eval"):]) if "lm_eval" in parts and "tasks" in parts
            else "ccq_eval_task_file." + "_".join(parts[1:]))
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return sys.modules[name]
