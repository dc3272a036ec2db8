"""The task plugins ship inside the wheel (tasks/ -> ccq_eval/tasks) and lm-eval finds them there."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.e2e
def test_wheel_carries_the_plugins_and_lm_eval_finds_them(tmp_path):
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(REPO),
                    "-w", str(tmp_path)], check=True, capture_output=True)
    wheel = next(tmp_path.glob("ccq_eval-*.whl"))
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(tmp_path / "site")
    tasks = tmp_path / "site" / "ccq_eval" / "tasks"
    assert (tasks / "sniah" / "_sniah_yaml").exists() and (tmp_path / "site" / "ccq_eval" / "data" / "text" / "essays.txt").exists()
    from lm_eval.tasks import TaskManager

    found = set(TaskManager(include_path=str(tasks), include_defaults=False).all_tasks)
    assert {"sniah_1", "sniah_2", "sniah_3", "longppl_pg19", "longppl_codeparrot"} <= found
