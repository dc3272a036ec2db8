"""The environment record (ccq_eval/machine.py): what `ccq-eval env` prints is what a run stores, and how a run's
torch thread count is chosen."""

import importlib.metadata
import json
import sqlite3

import pytest
import torch

from ccq_eval import machine
from ccq_eval.cli import main


def test_env_prints_the_record_of_this_environment(capsys):
    assert main(["env", "--device", "cpu", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["versions"]["torch"] == importlib.metadata.version("torch")
    assert record["versions"]["transformers"] == importlib.metadata.version("transformers")
    assert record["versions"]["fla"] == importlib.metadata.version("flash-linear-attention")
    assert record["device"] == {"device": "cpu", "name": machine.cpu_name(), "cores": machine.usable_cores()}
    assert record["kernels"]["GLA"] == machine.CPU_BACKEND and record["kernels"]["CCQ-GDN"] == machine.CPU_BACKEND
    assert record["threads"]["torch"] == torch.get_num_threads()
    assert main(["env", "--device", "cpu"]) == 0
    text = capsys.readouterr().out
    assert f"transformers {record['versions']['transformers']}" in text and "CCQ-GLA: ccq-eval's CPU backend" in text
    from ccq_eval.task_plugins import include_path

    assert record["paths"]["task_plugins"] == include_path() and f"task plugins: {include_path()}" in text


def test_on_cuda_each_family_names_its_kernels():
    paths = machine.kernel_paths("cuda")
    assert paths["GLA"] == machine.TRITON and paths["CCQ-GLA"] == machine.TRITON
    assert "mamba_ssm" in paths["Mamba"]  # fla's Mamba calls mamba_ssm's kernels when installed


def test_env_refuses_a_device_this_torch_cannot_see(capsys, monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["env", "--device", "cuda"]) == 2
    assert "sees no CUDA device" in capsys.readouterr().err


@pytest.mark.parametrize("requested,omp,cores,load,expected", [
    (3, "1", 2, 0.0, (3, "--threads")),
    (None, "1", 2, 0.0, (1, "OMP_NUM_THREADS")),
    (None, None, 2, 0.0, (2, "2 usable cores, load average 0.0 at start")),
    (None, None, 2, 1.2, (1, "2 usable cores, load average 1.2 at start")),
    (None, None, 2, 7.0, (1, "2 usable cores, load average 7.0 at start")),
    (None, None, 16, 3.4, (13, "16 usable cores, load average 3.4 at start")),
])
def test_thread_choice(monkeypatch, requested, omp, cores, load, expected):
    if omp is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", omp)
    monkeypatch.setattr(machine, "usable_cores", lambda: cores)
    monkeypatch.setattr(machine.os, "getloadavg", lambda: (load, load, load))
    assert machine.choose_threads(requested) == expected


@pytest.mark.e2e
def test_a_run_records_the_env_record_and_its_threads(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    store = tmp_path / "s.db"
    before = torch.get_num_threads()
    try:
        assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "1",
                     "--device", "cpu", "--threads", "1", "--store", str(store)]) == 0
        assert torch.get_num_threads() == 1
    finally:
        torch.set_num_threads(before)
    versions = json.loads(sqlite3.connect(store).execute("SELECT versions FROM runs").fetchone()[0])
    expected = machine.record("cpu", str(store), "--threads")
    assert {k: versions[k] for k in expected["versions"]} == expected["versions"]
    record = versions["machine"]
    assert record["device"] == expected["device"] and record["kernels"] == expected["kernels"]
    assert record["threads"]["torch"] == 1 and record["threads"]["chosen_by"] == "--threads"
    assert record["paths"]["store"] == str(store)


def test_the_record_names_the_kernel_caches_triton_and_fla_use(monkeypatch, tmp_path):
    from ccq_eval import machine

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "shared"))
    monkeypatch.setenv("FLA_CACHE_MODE", "fuzzy")
    monkeypatch.delenv("FLA_CONFIG_DIR", raising=False)
    record = machine.record("cpu")
    assert record["kernel_caches"] == {"triton_cache_dir": str(tmp_path / "shared"), "FLA_CACHE_RESULTS": None,
                                       "FLA_CONFIG_DIR": None, "FLA_CACHE_MODE": "fuzzy"}
    assert f"kernel cache: {tmp_path / 'shared'} (TRITON_CACHE_DIR; FLA_CACHE_MODE fuzzy;" in machine.describe(record)
    monkeypatch.delenv("TRITON_CACHE_DIR")
    monkeypatch.setenv("TRITON_HOME", str(tmp_path))
    assert machine.triton_cache_dir() == str(tmp_path / ".triton" / "cache")  # Triton's own rule
