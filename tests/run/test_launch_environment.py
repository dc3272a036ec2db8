"""The launcher's environment is checked before anything loads, and data-parallel ranks meet within a stated time.
A variable ccq-eval cannot run under (WORLD_SIZE empty, a word or 2.0; RANK past the world; LOCAL_RANK negative; no
MASTER_ADDR or MASTER_PORT for two processes) is one line naming it, exit 2, no store; a rank whose peers never come
names them after --rendezvous-timeout, exit 2, nothing written (two real processes, torch's store on loopback)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from ccq_eval.cli import main
from ccq_eval.generation.ranks import Launch, LaunchError, launch

REPO = Path(__file__).resolve().parents[2]
TWO = {"WORLD_SIZE": "2", "RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "29500"}


@pytest.mark.parametrize("environ,named", [
    ({"WORLD_SIZE": ""}, "WORLD_SIZE=''"),
    ({"WORLD_SIZE": "abc"}, "WORLD_SIZE='abc': not an integer"),
    ({"WORLD_SIZE": "2.0"}, "WORLD_SIZE='2.0': not an integer"),
    ({"WORLD_SIZE": "0"}, "WORLD_SIZE='0'"),
    ({**TWO, "RANK": "5"}, "RANK='5': must be in [0, 1] under WORLD_SIZE=2"),
    ({**TWO, "RANK": "-1"}, "RANK='-1'"),
    ({k: v for k, v in TWO.items() if k != "RANK"}, "RANK is not set under WORLD_SIZE=2"),
    ({**TWO, "LOCAL_RANK": "x"}, "LOCAL_RANK='x': not an integer"),
    ({**TWO, "LOCAL_RANK": "-2"}, "LOCAL_RANK='-2'"),
    ({k: v for k, v in TWO.items() if k != "MASTER_ADDR"}, "MASTER_ADDR is not set under WORLD_SIZE=2"),
    ({**TWO, "MASTER_PORT": ""}, "MASTER_PORT is not set"),
    ({**TWO, "MASTER_PORT": "70000"}, "MASTER_PORT='70000': not a TCP port"),
])
def test_a_launch_environment_it_cannot_run_under_is_one_line_naming_the_variable(environ, named, tmp_path,
                                                                                   monkeypatch, capsys):
    for name in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(LaunchError, match="^" + named.replace("[", r"\[").replace("]", r"\]")):
        launch()
    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--store", str(store), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert named in err and "\n" not in err and not store.exists()


def test_the_environments_launchers_write_are_read():
    assert launch({}) == Launch()
    assert launch({"WORLD_SIZE": "1"}) == Launch()
    assert launch({**TWO, "RANK": "1", "LOCAL_RANK": "0"}) == Launch(1, 2, 0, "127.0.0.1", 29500)
    assert launch({**TWO, "RANK": " 1 "}).rank == 1  # torchrun writes none, but a shell export may pad


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.mark.processes
@pytest.mark.parametrize("rank,said", [("0", "rank 1 of 2 never came to the rendezvous"), ("1", "rank 0 never came")])
def test_a_rank_whose_peer_never_comes_names_it_and_writes_nothing(rank, said, tmp_path):
    store = tmp_path / "s.db"
    env = {**os.environ, **TWO, "RANK": rank, "MASTER_PORT": str(free_port()), "PYTHONPATH": str(REPO),
           "CCQ_EVAL_CACHE": str(tmp_path / "cache")}
    env.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    done = subprocess.run([sys.executable, "-m", "ccq_eval", "--model", "zoo:gla-tiny", "--suite", "sniah",
                           "--lengths", "1k", "--samples", "1", "--store", str(store), "--device", "cpu",
                           "--rendezvous-timeout", "0.05"], env=env, capture_output=True, text=True, timeout=120)
    err = done.stderr.strip().splitlines()
    assert done.returncode == 2 and said in err[-1] and "--rendezvous-timeout" in err[-1], done.stderr[-2000:]
    assert not store.exists()


@pytest.mark.processes
def test_two_processes_started_by_hand_meet_without_torchruns_agent(tmp_path):
    """What a Slurm srun or a hand-written launch gives: the environment alone, no torchrun agent store; rank 0 opens
    the rendezvous, both meet, and the run completes once."""
    store = tmp_path / "s.db"
    base = {**os.environ, **TWO, "MASTER_PORT": str(free_port()), "PYTHONPATH": str(REPO),
            "CCQ_EVAL_CACHE": str(tmp_path / "cache"), "OMP_NUM_THREADS": "1"}
    base.pop("TORCHELASTIC_USE_AGENT_STORE", None)
    args = [sys.executable, "-m", "ccq_eval", "--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1",
            "--lengths", "1k", "--samples", "2", "--store", str(store), "--device", "cpu", "--rendezvous-timeout", "2"]
    ranks = [subprocess.Popen(args, env={**base, "RANK": str(r), "LOCAL_RANK": str(r)}, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    outs = [rank.communicate(timeout=300) for rank in ranks]
    assert [rank.returncode for rank in ranks] == [0, 0], [err[-1500:] for _, err in outs]
    import sqlite3

    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 2
