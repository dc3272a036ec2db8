"""Faults and scale-out of a run: a full disk mid-run, SIGINT and SIGKILL, data parallelism, --shard; the
store's own guarantees (one result per unit key, ingest) are tests/store/."""

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.run import run_suite
from ccq_eval.store import StoreWriteError
from ccq_eval.store.writes import Writes
from tests.helpers import cli_command, oracle_request as request, save_checkpoint, tiny_model, unit_rows, wait_for_units
from tests.oracle import oracle_loader

REPO = Path(__file__).resolve().parents[2]


def test_disk_full_mid_run_keeps_whole_units_and_says_so(tokenizer_dir, tmp_path, monkeypatch):
    store = tmp_path / "s.db"
    calls = []
    real_write = Writes.write_unit

    def filling_write(self, unit, metrics, samples, **kwargs):
        calls.append(unit["task"])
        if len(calls) == 2:  # the disk fills up just before the second unit is written
            pages = self.db.execute("PRAGMA page_count").fetchone()[0]
            self.db.execute(f"PRAGMA max_page_count = {pages}")
        return real_write(self, unit, metrics, samples, **kwargs)

    monkeypatch.setattr(Writes, "write_unit", filling_write)
    with pytest.raises(StoreWriteError, match="cannot write .*full.*rerun to resume"):
        run_suite(request(store, samples=40), oracle_loader(tokenizer_dir), out=lambda *_: None)
    rows = unit_rows(store)
    assert len(rows) == 1 and rows[0][1:] == ("complete", 40)  # the first unit whole, nothing of the second
    monkeypatch.setattr(Writes, "write_unit", real_write)
    assert run_suite(request(store, samples=40), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    assert len(unit_rows(store)) == 3  # the rerun resumed: the first unit was skipped


def test_cli_maps_a_failed_write_to_exit_1(monkeypatch, capsys):
    import ccq_eval.run as runner

    def boom(*_, **__):
        raise StoreWriteError("store 'x.db': cannot write (database or disk is full); nothing partial was kept")

    monkeypatch.setattr(runner, "run_suite", boom)
    assert main(["--model", "m", "--suite", "sniah"]) == 1
    assert capsys.readouterr().err.strip() == "ccq-eval: error: store 'x.db': cannot write (database or disk is full); nothing partial was kept"


@pytest.mark.e2e
@pytest.mark.processes
def test_sigint_prints_what_finished_and_resumes(tmp_path):
    cmd, env, store = cli_command(tmp_path, "gla", samples=10)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    wait_for_units(store, proc, 1)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 130
    assert "interrupted; finished units: sniah_1@1024" in out and "Rerun the same command to resume" in out
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert all(status == "complete" for _, status, _ in unit_rows(store))
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    assert len(unit_rows(store)) == 6


def test_a_rerun_under_a_new_label_reuses_every_unit_and_computes_nothing(tokenizer_dir, tmp_path):
    lines = []
    assert run_suite(request(tmp_path / "s.db", label="first"), oracle_loader(tokenizer_dir), out=lines.append) == 0
    lines.clear()

    def no_evaluation(req, max_length):  # the model loads, but no prompt reaches it
        evaluand = oracle_loader(tokenizer_dir)(req, max_length)
        evaluand.generator.generate = lambda *a, **k: pytest.fail("a reused unit was evaluated again")
        return evaluand

    assert run_suite(request(tmp_path / "s.db", label="second"), no_evaluation, out=lines.append) == 0
    assert sum("reused: computed by run" in line for line in lines) == 3, lines
    lines.clear()
    assert run_suite(request(tmp_path / "s.db", label="second"), no_evaluation, out=lines.append) == 0
    assert "all 3 units already complete under label 'second'" in lines[-1]


@pytest.mark.parametrize("shard,message", [("2/2", "need 0 <= i < n"), ("a/b", "expected i/n")])
def test_bad_shards(tokenizer_dir, tmp_path, shard, message):
    from ccq_eval.suites.base import SuiteError

    with pytest.raises(SuiteError, match=message):
        run_suite(request(tmp_path / "s.db", shard=shard), oracle_loader(tokenizer_dir), out=lambda *_: None)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.e2e
@pytest.mark.processes
def test_two_process_data_parallel_equals_one_process(tmp_path):
    """Two CPU processes under torch's launcher (what `accelerate launch --multi_gpu` runs on GPUs;
    accelerate's own CPU mode needs MPI), gloo backend: the ranks split the prompts, rank 0 alone
    writes the store, and every prediction and score equals a one-process run's."""
    torch.manual_seed(0)
    model = save_checkpoint(tiny_model("ccq_gla"), tmp_path / "m")
    env = {**os.environ, "PYTHONPATH": str(REPO), "CCQ_EVAL_CACHE": str(tmp_path / "cache"),
           "RANK_LOG": str(tmp_path / "ranks.log")}
    args = ["--model", str(model), "--suite", "sniah", "--lengths", "1k", "--samples", "6", "--device", "cpu"]
    one, two = tmp_path / "one.db", tmp_path / "two.db"
    assert subprocess.run([sys.executable, "-m", "tests.rank_logging", *args, "--store", str(one)], env=env,
                          capture_output=True).returncode == 0
    (tmp_path / "ranks.log").unlink()
    import socket

    with socket.socket() as probe:  # a free port: another test run on this machine may hold any fixed one
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    launcher = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "--master_port", str(port)]
    done = subprocess.run([*launcher, "-m", "tests.rank_logging", *args, "--store", str(two)], env=env,
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr[-2000:]
    answered = [line.split() for line in (tmp_path / "ranks.log").read_text().splitlines()]
    assert {rank for rank, _ in answered} == {"0", "1"}  # both ranks generated
    assert sum(int(n) for _, n in answered) == 18  # and between them, each prompt once
    query = ("SELECT u.task, s.idx, s.prediction, s.score FROM samples s JOIN units u ON u.id = s.unit_id "
             "ORDER BY u.task, s.idx")
    assert sqlite3.connect(two).execute(query).fetchall() == sqlite3.connect(one).execute(query).fetchall()
    assert sqlite3.connect(two).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1  # rank 0 alone wrote


def test_empty_generations_are_a_warning_on_a_complete_unit(tokenizer_dir, tmp_path):
    from tests.oracle import OracleLM

    class Silent(OracleLM):
        def respond(self, prompt):
            return ""

    def load(req, max_length):
        evaluand = oracle_loader(tokenizer_dir)(req, max_length)
        evaluand.generator = Silent()
        return evaluand

    store = tmp_path / "s.db"
    assert run_suite(request(store), load, out=lambda *_: None) == 0
    status, settings = sqlite3.connect(store).execute("SELECT status, settings FROM units").fetchone()
    settings = json.loads(settings)
    assert status == "complete" and settings["warning"] == "every prediction is empty"
    assert settings["empty_predictions"] == 3


def test_an_interrupt_just_after_a_unit_is_stored_counts_that_unit(tokenizer_dir, tmp_path, monkeypatch):
    """Ctrl-C landing after a unit's commit and before the runner counted it: the message names every unit the
    store holds for the run (it listed one fewer)."""
    store = tmp_path / "s.db"
    real_write = Writes.write_unit
    lines = []

    def write_then_interrupt(self, unit, metrics, samples, **kwargs):
        unit_id = real_write(self, unit, metrics, samples, **kwargs)
        if unit["context_length"] == 2048:
            raise KeyboardInterrupt
        return unit_id

    monkeypatch.setattr(Writes, "write_unit", write_then_interrupt)
    assert run_suite(request(store, lengths="1k,2k,4k", tasks="1"), oracle_loader(tokenizer_dir), out=lines.append) == 130
    stored = sqlite3.connect(store).execute("SELECT task, context_length FROM units ORDER BY rowid").fetchall()
    assert stored == [("sniah_1", 1024), ("sniah_1", 2048)]
    assert lines[-1] == (f"interrupted; finished units: sniah_1@1024, sniah_1@2048 (2 stored in {store}). "
                         "Rerun the same command to resume.")
