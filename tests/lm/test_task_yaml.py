"""lm/task_yaml.py reads lm-eval's task YAMLs as lm-eval's own (private) loader does, for every task the lm suite runs
and every plugin in tasks/ (its reference); and the package names nothing private of lm-eval's."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ccq_eval.lm.harness import builtin_tasks
from ccq_eval.lm.task_yaml import read_task_yaml
from ccq_eval.suites.lm.data import METRICS
from ccq_eval.task_plugins import TASKS_DIR

PACKAGE = Path(__file__).resolve().parents[2] / "ccq_eval"


def lm_evals_reading(path):
    from lm_eval.tasks._yaml_loader import load_yaml  # the reference: lm-eval's own reader, private to it

    return named(load_yaml(path, resolve_func=True))


def named(value):
    """A config with each function or class as (its file, its name): lm-eval's reader loads a task's Python file anew
    when it finds a module it did not load itself, so the objects differ while the code is the same."""
    import inspect

    if isinstance(value, dict):
        return {k: named(v) for k, v in value.items()}
    if isinstance(value, list):
        return [named(v) for v in value]
    if callable(value):
        return inspect.getsourcefile(value), value.__qualname__
    return value


@pytest.mark.parametrize("task", sorted(METRICS))
def test_every_lm_suite_task_reads_as_lm_eval_reads_it(task):
    path = builtin_tasks().task_index[task].yaml_path
    assert named(read_task_yaml(path)) == lm_evals_reading(path)


def test_every_plugin_reads_as_lm_eval_reads_it():
    paths = sorted(TASKS_DIR.glob("*/*.yaml"))
    assert len(paths) > 30
    for path in paths:
        assert named(read_task_yaml(path)) == lm_evals_reading(path), path


def test_includes_merge_under_the_including_file_and_a_cycle_is_refused(tmp_path):
    (tmp_path / "helpers.py").write_text("def double(x):\n    return 2 * x\n")
    (tmp_path / "base.yaml").write_text("output_type: generate_until\nrepeats: 1\ntask_list: [a]\n"
                                        "process: !function helpers.double\n")
    (tmp_path / "task.yaml").write_text("include: base.yaml\ntask: mine\nrepeats: 3\n")
    config = read_task_yaml(tmp_path / "task.yaml")
    assert config["repeats"] == 3 and config["output_type"] == "generate_until" and "task_list" not in config
    assert config["process"](4) == 8
    assert named(config) == lm_evals_reading(tmp_path / "task.yaml")
    (tmp_path / "loop.yaml").write_text("include: loop.yaml\ntask: loop\n")
    with pytest.raises(ValueError, match="includes itself"):
        read_task_yaml(tmp_path / "loop.yaml")


PRIVATE = re.compile(r"\blm_eval(?:\.\w+)*\._(?!_)\w+|from lm_eval(?:\.\w+)* import [^\n]*\b_(?!_)\w+")


def test_the_package_names_nothing_private_of_lm_eval():
    found = {str(p.relative_to(PACKAGE)): m.group() for p in PACKAGE.rglob("*.py")
             if (m := PRIVATE.search(p.read_text()))}
    assert found == {}
    assert PRIVATE.search("from lm_eval.tasks._yaml_loader import load_yaml")
    assert PRIVATE.search("from lm_eval.models.utils import _private_thing")
    assert not PRIVATE.search("from lm_eval.models.utils import normalize_gen_kwargs")
    assert not PRIVATE.search("from lm_eval.__main__ import cli_evaluate")
