"""Faults and scale-out: a full disk mid-run, SIGINT, schema versions, several writers at once,
--shard and ingest."""

import json
import multiprocessing
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.store import Store, StoreError, StoreWriteError
from tests.helpers import cli_command, save_checkpoint, tiny_model, wait_for_units
from tests.oracle import oracle_loader

REPO = Path(__file__).resolve().parents[2]


def request(store, **kw):
    return RunRequest(model="oracle", suite="sniah", lengths=kw.pop("lengths", "1k"), samples=kw.pop("samples", 3),
                      store=str(store), **kw)


def unit_rows(store):
    return sqlite3.connect(store).execute(
        "SELECT u.unit_key, u.status, COUNT(s.idx) FROM units u LEFT JOIN samples s ON s.unit_id = u.id "
        "GROUP BY u.id").fetchall()


def test_disk_full_mid_run_keeps_whole_units_and_says_so(tokenizer_dir, tmp_path, monkeypatch):
    store = tmp_path / "s.db"
    original = Store.write_unit.__wrapped__ if hasattr(Store.write_unit, "__wrapped__") else None
    calls = []
    real_write = Store.write_unit

    def filling_write(self, unit, metrics, samples, **kwargs):
        calls.append(unit["task"])
        if len(calls) == 2:  # the disk fills up just before the second unit is written
            pages = self.db.execute("PRAGMA page_count").fetchone()[0]
            self.db.execute(f"PRAGMA max_page_count = {pages}")
        return real_write(self, unit, metrics, samples, **kwargs)

    monkeypatch.setattr(Store, "write_unit", filling_write)
    with pytest.raises(StoreWriteError, match="cannot write .*full.*rerun to resume"):
        run_suite(request(store, samples=40), oracle_loader(tokenizer_dir), out=lambda *_: None)
    rows = unit_rows(store)
    assert len(rows) == 1 and rows[0][1:] == ("complete", 40)  # the first unit whole, nothing of the second
    assert original is None
    monkeypatch.setattr(Store, "write_unit", real_write)
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


def test_schema_versions(tmp_path):
    newer = tmp_path / "newer.db"
    Store(newer).close()
    sqlite3.connect(newer).execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="schema version 99 is newer than this ccq-eval's"):
        Store(newer)
    foreign = tmp_path / "foreign.db"
    sqlite3.connect(foreign).execute("CREATE TABLE people (name TEXT)")
    with pytest.raises(StoreError, match="not a ccq-eval store"):
        Store(foreign)


def _writer(args):
    """One run of the oracle on a shared store; with ``ready`` set, every writer waits for all of them to have
    loaded their model before any reads the store, so all start with nothing complete (the worst race)."""
    store, tokenizer_dir, label, shard, cache, ready, writers = args
    os.environ["CCQ_EVAL_CACHE"] = cache
    from ccq_eval.run import RunRequest, run_suite
    from tests.oracle import oracle_loader

    def load(request, max_length):
        evaluand = oracle_loader(Path(tokenizer_dir))(request, max_length)
        if ready:
            (Path(ready) / str(os.getpid())).touch()
            deadline = time.time() + 120
            while len(list(Path(ready).iterdir())) < writers and time.time() < deadline:
                time.sleep(0.01)
        return evaluand

    req = RunRequest(model="oracle", suite="sniah", lengths="1k,2k", samples=4, store=store, label=label, shard=shard)
    return run_suite(req, load, out=lambda *_: None)


def one_result_per_unit_key(store) -> None:
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT unit_key) FROM units WHERE status = 'complete'").fetchone() == (6, 6)
    assert db.execute("SELECT COUNT(*) FROM units WHERE status != 'complete'").fetchone()[0] == 0
    assert db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 6 * 4
    assert db.execute("SELECT COUNT(*), MIN(value) FROM metrics WHERE metric = 'score'").fetchone() == (6, 100.0)


@pytest.mark.parametrize("writers", [2, 4])
def test_identical_runs_started_together_store_one_result_per_unit_key(tokenizer_dir, tmp_path, writers):
    store, ready = str(tmp_path / "shared.db"), tmp_path / "ready"
    ready.mkdir()
    jobs = [(store, str(tokenizer_dir), "o", None, str(tmp_path / "cache"), str(ready), writers)] * writers
    with multiprocessing.get_context("spawn").Pool(writers) as pool:
        assert pool.map(_writer, jobs) == [0] * writers
    one_result_per_unit_key(store)


def test_writers_under_other_labels_and_shards_lose_and_duplicate_nothing(tokenizer_dir, tmp_path):
    """A label names a model in tables, it is not part of a unit's identity: four runs of one model under
    three labels (one sharded in two) leave each unit once, complete."""
    store = str(tmp_path / "shared.db")
    jobs = [(store, str(tokenizer_dir), label, shard, str(tmp_path / "cache"), None, 0)
            for label, shard in (("A", None), ("B", None), ("C", "0/2"), ("C", "1/2"))]
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        assert pool.map(_writer, jobs) == [0, 0, 0, 0]
    one_result_per_unit_key(store)


def test_a_second_result_for_a_unit_key_is_not_stored_and_force_replaces_the_first(tokenizer_dir, tmp_path, capsys):
    store_path = tmp_path / "s.db"
    assert run_suite(request(store_path, tasks="1"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    store = Store(store_path)
    (unit,) = [dict(r) for r in store.query("SELECT * FROM units")]
    (first_score,) = [r[0] for r in store.query("SELECT value FROM metrics WHERE metric = 'score'")]
    metric = {"label": "x", "model": "m", "metric": "score", "value": 0.0, "is_primary": True}
    second = {**unit, "id": None, "settings": {}}
    assert store.write_unit(second, [metric], []) is None  # another writer got there first: nothing written
    assert [r[0] for r in store.query("SELECT value FROM metrics WHERE metric = 'score'")] == [first_score]
    replaced = store.write_unit(second, [metric], [], replace=True)
    assert [tuple(r) for r in store.query("SELECT id, status FROM units")] == [(replaced, "complete")]
    assert [r[0] for r in store.query("SELECT value FROM metrics WHERE metric = 'score'")] == [0.0]
    assert store.query("SELECT COUNT(*) FROM samples WHERE unit_id = ?", (unit["id"],))[0][0] == 0  # cascaded
    with pytest.raises(sqlite3.IntegrityError):  # the index says so too, whatever the code path
        store.db.execute("INSERT INTO units SELECT 'other', run_id, suite, task, context_length, unit_key, status, "
                         "reason, started, finished, dataset_fingerprint, settings FROM units")


def test_a_rerun_under_a_new_label_says_why_nothing_ran(tokenizer_dir, tmp_path):
    lines = []
    assert run_suite(request(tmp_path / "s.db", label="first"), oracle_loader(tokenizer_dir), out=lines.append) == 0
    lines.clear()
    assert run_suite(request(tmp_path / "s.db", label="second"), oracle_loader(tokenizer_dir), out=lines.append) == 0
    assert "stored under label 'first' (a label is not part of a unit's identity)" in lines[-1], lines


def test_ingest_keeps_one_result_per_unit_key(tokenizer_dir, tmp_path, capsys):
    a, b, merged = tmp_path / "a.db", tmp_path / "b.db", tmp_path / "m.db"
    for store in (a, b):  # the same units, computed twice on two machines
        assert run_suite(request(store), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    assert main(["ingest", str(a), str(b), "--store", str(merged)]) == 0
    out = capsys.readouterr().out
    assert "b.db: 1 runs, 0 units added; 3 complete units skipped (a result for their unit key is already here)" in out
    assert sqlite3.connect(merged).execute("SELECT COUNT(*), COUNT(DISTINCT unit_key) FROM units").fetchone() == (3, 3)


def test_shards_partition_the_units_and_ingest_merges_them(tokenizer_dir, tmp_path, capsys):
    whole, parts = tmp_path / "whole.db", [tmp_path / f"part{i}.db" for i in range(3)]
    assert run_suite(request(whole, lengths="1k,2k"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    for i, part in enumerate(parts):
        assert run_suite(request(part, lengths="1k,2k", shard=f"{i}/3"), oracle_loader(tokenizer_dir),
                         out=lambda *_: None) == 0
    keys = [set(k for k, *_ in unit_rows(p)) for p in parts]
    assert all(keys) and not (keys[0] & keys[1] or keys[0] & keys[2] or keys[1] & keys[2])
    assert set().union(*keys) == {k for k, *_ in unit_rows(whole)}
    merged = tmp_path / "merged.db"
    assert main(["ingest", *map(str, parts), "--store", str(merged)]) == 0
    assert main(["ingest", *map(str, parts), "--store", str(merged)]) == 0  # idempotent
    assert sorted(unit_rows(merged)) == sorted(r for p in parts for r in unit_rows(p))
    scores = "SELECT u.unit_key, m.value FROM metrics m JOIN units u ON u.id = m.unit_id WHERE m.metric = 'score'"
    assert dict(sqlite3.connect(merged).execute(scores)) == dict(sqlite3.connect(whole).execute(scores))
    out = capsys.readouterr().out
    assert "0 runs, 0 units added" in out.splitlines()[-1]


def test_ingest_refuses_runs_without_provenance(tokenizer_dir, tmp_path, capsys):
    source = tmp_path / "src.db"
    run_suite(request(source), oracle_loader(tokenizer_dir), out=lambda *_: None)
    sqlite3.connect(source).execute("UPDATE runs SET weights_sha256 = ''").connection.commit()
    target = tmp_path / "t.db"
    assert main(["ingest", str(source), "--store", str(target)]) == 1
    assert "lacks weights_sha256" in capsys.readouterr().out
    assert sqlite3.connect(target).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 0


@pytest.mark.parametrize("shard,message", [("2/2", "need 0 <= i < n"), ("a/b", "expected i/n")])
def test_bad_shards(tokenizer_dir, tmp_path, shard, message):
    from ccq_eval.suites.base import SuiteError

    with pytest.raises(SuiteError, match=message):
        run_suite(request(tmp_path / "s.db", shard=shard), oracle_loader(tokenizer_dir), out=lambda *_: None)
    assert not (tmp_path / "s.db").exists()


@pytest.mark.e2e
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


@pytest.mark.e2e
def test_sigkill_at_random_points_never_leaves_a_partial_unit(tmp_path):
    """Killed at seeded random moments (start-up, mid-unit, mid-write): every stored unit is whole,
    and the final rerun completes the set with no duplicates."""
    import random

    cmd, env, store = cli_command(tmp_path, "gla", samples=8)
    rng = random.Random(7)
    for _ in range(3):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(4.0, 14.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if store.exists():
            for _, status, samples in unit_rows(store):
                assert status == "complete" and samples == 8
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT task || context_length) FROM units").fetchone() == (6, 6)
    assert db.execute("SELECT COUNT(*) FROM metrics WHERE metric = 'score'").fetchone()[0] == 6


def test_empty_generations_are_a_warning_on_a_complete_unit(tokenizer_dir, tmp_path):
    from tests.oracle import OracleLM

    class Silent(OracleLM):
        def generate_until(self, requests, disable_tqdm=False):
            return ["" for _ in requests]

    def load(req, max_length):
        evaluand = oracle_loader(tokenizer_dir)(req, max_length)
        evaluand.lm = Silent()
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
    real_write = Store.write_unit
    lines = []

    def write_then_interrupt(self, unit, metrics, samples, **kwargs):
        unit_id = real_write(self, unit, metrics, samples, **kwargs)
        if unit["context_length"] == 2048:
            raise KeyboardInterrupt
        return unit_id

    monkeypatch.setattr(Store, "write_unit", write_then_interrupt)
    assert run_suite(request(store, lengths="1k,2k,4k", tasks="1"), oracle_loader(tokenizer_dir), out=lines.append) == 130
    stored = sqlite3.connect(store).execute("SELECT task, context_length FROM units ORDER BY rowid").fetchall()
    assert stored == [("sniah_1", 1024), ("sniah_1", 2048)]
    assert lines[-1] == (f"interrupted; finished units: sniah_1@1024, sniah_1@2048 (2 stored in {store}). "
                         "Rerun the same command to resume.")
