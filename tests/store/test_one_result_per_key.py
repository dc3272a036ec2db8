"""One computed result per unit key, whoever writes, and every label's full row: several runs at once on one
store (the same label or others, sharded or not), a second write of a key, a label reusing another's result,
--force, ingest of the same units from two machines and of shards; and the schema a store must have."""

import multiprocessing
import os
import re
import sqlite3
import time
from pathlib import Path

import pytest

from ccq_eval.cli import main
from ccq_eval.run import run_suite
from ccq_eval.store import Store, StoreError
from tests.helpers import oracle_request as request, unit_rows
from tests.oracle import oracle_loader


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

    req = RunRequest(model="oracle", suite="sniah", lengths="1k", samples=4, store=store, label=label, shard=shard)
    return run_suite(req, load, out=lambda *_: None)


UNITS = 3  # S-NIAH-1/2/3 at 1K: what each writer plans


def one_result_per_unit_key(store, labels=("o",)) -> None:
    """UNITS units computed once each, and every label holding all of them with the same numbers and samples."""
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*), COUNT(DISTINCT unit_key) FROM units WHERE status = 'complete' "
                      "AND reused_from IS NULL").fetchone() == (UNITS, UNITS)
    assert db.execute("SELECT COUNT(*) FROM units WHERE status != 'complete'").fetchone()[0] == 0
    per_label = dict(db.execute("SELECT r.label, COUNT(DISTINCT u.unit_key) FROM units u JOIN runs r ON "
                                "r.id = u.run_id WHERE u.status = 'complete' GROUP BY r.label").fetchall())
    assert per_label == {label: UNITS for label in labels}
    assert db.execute("SELECT COUNT(*) FROM units").fetchone()[0] == UNITS * len(labels)  # no label holds a key twice
    assert db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == UNITS * 4 * len(labels)
    scores = db.execute("SELECT m.label, u.unit_key, m.value FROM metrics m JOIN units u ON u.id = m.unit_id "
                        "WHERE m.metric = 'score'").fetchall()
    assert len(scores) == UNITS * len(labels) and {v for *_, v in scores} == {100.0}
    assert {label for label, *_ in scores} == set(labels)
    reused = db.execute("SELECT COUNT(*) FROM units u JOIN units s ON s.id = u.reused_from AND "
                        "s.unit_key = u.unit_key AND s.reused_from IS NULL").fetchone()[0]
    assert reused == UNITS * (len(labels) - 1)  # every other label's unit points at the one computed result


# 4 runs: two of them under the same label (identical runs racing); 8 runs: six labels and a seventh run in two
# shards, all started together (each waits until every one has loaded)
WRITERS = {4: [("W0", None), ("W0", None), ("W1", None), ("W2", None)],
           8: [*((f"W{i}", None) for i in range(6)), ("C", "0/2"), ("C", "1/2")]}


@pytest.mark.processes
@pytest.mark.parametrize("writers", sorted(WRITERS))
def test_runs_at_once_under_different_labels_each_hold_their_full_row(tokenizer_dir, tmp_path, writers):
    """A label names a model in tables, it is not part of a unit's identity: runs of one model under several labels,
    started together, compute each unit once, and every label holds every unit (the ones another run computed
    reused, with the same numbers), whichever run finished first; identical runs and shards lose and duplicate
    nothing."""
    store, ready = str(tmp_path / "shared.db"), tmp_path / "ready"
    ready.mkdir()
    jobs = [(store, str(tokenizer_dir), label, shard, str(tmp_path / "cache"), str(ready), writers)
            for label, shard in WRITERS[writers]]
    with multiprocessing.get_context("spawn").Pool(writers) as pool:
        assert pool.map(_writer, jobs) == [0] * writers
    labels = sorted({label for label, _ in WRITERS[writers]})
    one_result_per_unit_key(store, labels)
    from ccq_eval.catalogue import render_table
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(render_table(Store(store, readonly=True), "sniah")["csv"])))
    assert sorted(row["label"] for row in rows) == labels  # every label's row in the table
    cells = [[value for column, value in row.items() if column.startswith("S")] for row in rows]
    assert all(len(row) == UNITS and set(row) == {"100"} for row in cells), cells  # full: 3 tasks at 1K


def test_a_second_result_for_a_unit_key_is_not_stored_and_force_replaces_the_first(tokenizer_dir, tmp_path, capsys):
    store_path = tmp_path / "s.db"
    assert run_suite(request(store_path, tasks="1"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    store = Store(store_path)
    (unit,) = [dict(r) for r in store.connection.query("SELECT * FROM units")]
    (first_score,) = [r[0] for r in store.connection.query("SELECT value FROM metrics WHERE metric = 'score'")]
    metric = {"label": "x", "model": "m", "metric": "score", "value": 0.0, "is_primary": True}
    second = {**unit, "id": None, "settings": {}}
    # another writer of the same label got there first: nothing written, the label holds that result
    assert store.writes.write_unit(second, [metric], []) == (None, unit["id"])
    assert [r[0] for r in store.connection.query("SELECT value FROM metrics WHERE metric = 'score'")] == [first_score]
    replaced = store.writes.write_unit(second, [metric], [], replace=True).unit_id
    assert [tuple(r) for r in store.connection.query("SELECT id, status FROM units")] == [(replaced, "complete")]
    assert [r[0] for r in store.connection.query("SELECT value FROM metrics WHERE metric = 'score'")] == [0.0]
    assert store.connection.query("SELECT COUNT(*) FROM samples WHERE unit_id = ?", (unit["id"],))[0][0] == 0  # cascaded
    with pytest.raises(sqlite3.IntegrityError):  # the index says so too, whatever the code path
        store.connection.db.execute("INSERT INTO units SELECT 'other', run_id, suite, task, context_length, unit_key, status, "
                         "reason, started, finished, dataset_fingerprint, settings, NULL, NULL FROM units")


def test_another_label_reuses_a_result_and_force_gives_it_the_new_one(tokenizer_dir, tmp_path):
    from ccq_eval.store import Store

    store_path = tmp_path / "s.db"
    lines = []
    assert run_suite(request(store_path, tasks="1", label="A"), oracle_loader(tokenizer_dir), out=lines.append) == 0
    computed = Store(store_path, readonly=True).reads.units()[0]
    lines.clear()
    assert run_suite(request(store_path, tasks="1", label="B"), oracle_loader(tokenizer_dir), out=lines.append) == 0
    assert any(f"reused: computed by run {computed.run_id}" in line for line in lines), lines
    store = Store(store_path)
    b_unit = [u for u in store.reads.units() if u.id != computed.id][0]
    assert b_unit.reused_from == computed.id and b_unit.unit_key == computed.unit_key
    b_metrics = {m.metric: (m.value, m.label) for m in store.reads.metrics(b_unit.id)}
    assert {k: v for k, (v, _) in b_metrics.items()} == {m.metric: m.value for m in store.reads.metrics(computed.id)}
    assert {label for _, label in b_metrics.values()} == {"B"}
    assert [s.prediction for s in store.reads.samples(b_unit.id)] == [s.prediction for s in store.reads.samples(computed.id)]
    new = {"label": "A", "model": "m", "metric": "score", "value": 50.0, "is_primary": True}
    record = {k: getattr(computed, k) for k in ("run_id", "suite", "task", "context_length", "unit_key", "started")}
    replaced = store.writes.write_unit({**record, "status": "complete", "settings": {}}, [new], [], replace=True).unit_id
    assert store.reads.units(status="complete")[0].id == b_unit.id  # B's unit stays, and now holds the new result
    assert [(m.label, m.value) for m in store.reads.metrics(b_unit.id)] == [("B", 50.0)]
    assert [u.reused_from for u in store.reads.units() if u.id == b_unit.id] == [replaced]


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


def test_a_slurm_array_merged_by_ingest_equals_a_single_run(tokenizer_dir, tmp_path, monkeypatch, capsys):
    """`--shard slurm` in each task of an array numbered 1-3 (sbatch --array=1-3), as docs/reliability.md's script
    runs it, then its ingest step: the merged store holds the single run's units, metrics and samples."""
    whole, parts = tmp_path / "whole.db", [tmp_path / f"part{task}.db" for task in (1, 2, 3)]
    assert run_suite(request(whole, lengths="1k,2k"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    for task, part in zip((1, 2, 3), parts):
        for name, value in (("ID", task), ("MIN", 1), ("MAX", 3), ("COUNT", 3), ("STEP", 1)):
            monkeypatch.setenv(f"SLURM_ARRAY_TASK_{name}", str(value))
        assert run_suite(request(part, lengths="1k,2k", shard="slurm"), oracle_loader(tokenizer_dir),
                         out=lambda *_: None) == 0
    assert all(unit_rows(p) for p in parts)  # three units a shard: one task group each
    merged = tmp_path / "merged.db"
    assert main(["ingest", *map(str, parts), "--store", str(merged)]) == 0
    rows = ("SELECT u.unit_key, u.task, u.context_length, s.idx, s.score, s.prediction, s.target FROM samples s "
            "JOIN units u ON u.id = s.unit_id ORDER BY 1, 4")
    assert sqlite3.connect(merged).execute(rows).fetchall() == sqlite3.connect(whole).execute(rows).fetchall()
    metrics = "SELECT u.unit_key, m.metric, m.value FROM metrics m JOIN units u ON u.id = m.unit_id ORDER BY 1, 2"
    assert sqlite3.connect(merged).execute(metrics).fetchall() == sqlite3.connect(whole).execute(metrics).fetchall()


@pytest.mark.parametrize("variables,shard", [({"ID": "9", "MIN": "1", "COUNT": "3", "STEP": "4"}, (2, 3)),
                                             ({"ID": "0", "COUNT": "4"}, (0, 4))])
def test_slurm_array_numbering(variables, shard):
    """An array 1-9:4 (tasks 1, 5, 9) and a plain 0-3: each task's place from 0."""
    from ccq_eval.run.request import parse_shard

    environ = {f"SLURM_ARRAY_TASK_{k}": v for k, v in variables.items()}
    assert parse_shard("slurm", environ) == parse_shard("auto", environ) == shard


@pytest.mark.parametrize("variables,said", [
    ({"ID": "6", "MIN": "1", "COUNT": "3", "STEP": "4"}, "array task 6 is not one of 3 tasks from 1 by 4 (1, 5, 9)"),
    ({"ID": "13", "MIN": "1", "COUNT": "3", "STEP": "4"}, "array task 13 is not one of 3 tasks"),
    ({"ID": "1", "COUNT": "3", "STEP": "0"}, "step 0 and count 3 must be at least 1"),
    ({"ID": "1", "COUNT": "3", "STEP": "-4"}, "step -4 and count 3 must be at least 1"),
    ({"ID": "1", "COUNT": "0"}, "step 1 and count 0 must be at least 1"),
])
def test_slurm_ids_off_the_arrays_step_or_a_bad_step_are_refused(variables, said):
    from ccq_eval.run.request import parse_shard
    from ccq_eval.suites.base import SuiteError

    environ = {f"SLURM_ARRAY_TASK_{k}": v for k, v in variables.items()}
    with pytest.raises(SuiteError, match=re.escape(said)):
        parse_shard("slurm", environ)


def test_slurm_shard_outside_an_array_is_bad_input_and_auto_runs_everything(tokenizer_dir, tmp_path, monkeypatch):
    from ccq_eval.run.request import parse_shard
    from ccq_eval.suites.base import SuiteError

    for name in ("ID", "COUNT", "MIN", "STEP"):
        monkeypatch.delenv(f"SLURM_ARRAY_TASK_{name}", raising=False)
    with pytest.raises(SuiteError, match="SLURM_ARRAY_TASK_ID is not set"):
        run_suite(request(tmp_path / "s.db", shard="slurm"), oracle_loader(tokenizer_dir), out=lambda *_: None)
    assert not (tmp_path / "s.db").exists()
    assert parse_shard("auto", {}) is None
    with pytest.raises(SuiteError, match="not one of 3 tasks"):
        parse_shard("slurm", {"SLURM_ARRAY_TASK_ID": "7", "SLURM_ARRAY_TASK_COUNT": "3"})


def test_ingest_refuses_runs_without_provenance(tokenizer_dir, tmp_path, capsys):
    source = tmp_path / "src.db"
    run_suite(request(source), oracle_loader(tokenizer_dir), out=lambda *_: None)
    sqlite3.connect(source).execute("UPDATE runs SET weights_sha256 = ''").connection.commit()
    target = tmp_path / "t.db"
    assert main(["ingest", str(source), "--store", str(target)]) == 1
    assert "lacks weights_sha256" in capsys.readouterr().out
    assert sqlite3.connect(target).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 0
