"""The wheel: built quietly (packages and package data found by setuptools' own discovery, so no "Package would be
ignored" warning for a data folder; the license an SPDX string, so no deprecation warning), it carries every data
folder, and lm-eval finds the task plugins inside it (tasks/ -> ccq_eval/tasks)."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
# what a quiet build never prints (pip's lines about this machine's own index configuration are not the project's)
NOISE = ("would be ignored", "Warning", "deprecated", "!!")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    folder = tmp_path_factory.mktemp("wheel")
    out = subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", str(REPO),
                          "-w", str(folder)], capture_output=True, text=True, cwd=folder, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    return next(folder.glob("ccq_eval-*.whl")), out.stdout + out.stderr


def test_the_build_prints_no_warning(wheel):
    _, printed = wheel
    assert [line for line in printed.splitlines()
            if any(word in line for word in NOISE) and "Location 'file://" not in line] == []


def test_the_wheel_carries_every_data_folder(wheel):
    names = set(zipfile.ZipFile(wheel[0]).namelist())
    for expected in ("ccq_eval/zoo/gla-tiny/config.json", "ccq_eval/zoo/gla-tiny/model.safetensors",
                     "ccq_eval/view/assets/viewer.js", "ccq_eval/tasks/sniah/sniah_1.yaml",
                     "ccq_eval/tasks/sniah/_sniah_yaml", "ccq_eval/tasks/sniah/utils.py",
                     "ccq_eval/suites/sniah/driver.py", "ccq_eval/data/text/essays.txt"):
        assert expected in names, expected
    assert any(n.startswith("ccq_eval/reference/") and n.endswith(".csv") for n in names)


@pytest.mark.e2e
def test_lm_eval_finds_the_plugins_inside_the_wheel(wheel, tmp_path):
    with zipfile.ZipFile(wheel[0]) as archive:
        archive.extractall(tmp_path / "site")
    from lm_eval.tasks import TaskManager

    tasks = tmp_path / "site" / "ccq_eval" / "tasks"
    found = set(TaskManager(include_path=str(tasks), include_defaults=False).all_tasks)
    assert {"sniah_1", "sniah_2", "sniah_3", "longppl_pg19", "longppl_codeparrot"} <= found


# the oldest environment ccq-eval ran in on a GPU (docs/install.md): installing ccq-eval there must change nothing
GPU_ENVIRONMENT = {"torch": "2.11.0", "triton": "3.6.0", "transformers": "5.17.0"}
NEWEST = {"transformers": "5.25.0"}  # current when this was written; its generate() renamed the cache (tested)


def test_the_ranges_admit_the_gpu_environment_and_the_lock():
    import tomllib

    from packaging.requirements import Requirement

    ranges = {Requirement(r).name: Requirement(r).specifier
              for r in tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["dependencies"]}
    for name, version in {**GPU_ENVIRONMENT, **NEWEST}.items():
        assert ranges[name].contains(version), (name, version, str(ranges[name]))
    locked = dict(line.split("==") for line in (REPO / "constraints.txt").read_text().splitlines()
                  if "==" in line and not line.startswith("#"))
    for name, specifier in ranges.items():
        if name in locked:
            assert specifier.contains(locked[name].removesuffix("+cpu")), (name, locked[name], str(specifier))


def test_make_test_install_takes_the_oldest_cpu_build_where_the_floor_has_none():
    import sys

    sys.path.insert(0, str(REPO / "tests" / "install"))
    from floors import floors

    pinned = dict(p.split("==") for p in floors())
    assert pinned["torch"] == "2.13.0" and pinned["triton"] == "3.6"
