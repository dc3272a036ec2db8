"""`ccq-eval ingest` refuses what the tables could not show truthfully: a unit of a task this version does not know
(a newer ccq-eval's shard), and a second result for a cell a label already holds; `runs --delete` of a run whose
result other labels reuse leaves them holding it."""

from __future__ import annotations

import sqlite3

from ccq_eval.cli import main
from ccq_eval.run import run_suite
from tests.helpers import oracle_request
from tests.oracle import oracle_loader
from tests.report_store import build_store


def small_store(path):
    build_store(path, labels=("gla",), sniah_tasks=("sniah_1",), lengths=(1024,), samples=3, longbench_tasks=(),
                longppl_corpora=(), lm_tasks=(), hostile=False, failed=False).close()
    return path


def test_a_shard_unit_of_a_task_this_version_does_not_know_is_refused_and_the_rest_merged(tmp_path, capsys):
    shard = small_store(tmp_path / "shard.db")
    db = sqlite3.connect(shard)
    db.execute("UPDATE units SET task = 'sniah_9' WHERE task = 'sniah_1'")
    db.execute("UPDATE metrics SET task = 'sniah_9' WHERE task = 'sniah_1'")
    db.commit()
    db.close()
    target = tmp_path / "target.db"
    assert main(["ingest", str(shard), "--store", str(target)]) == 1
    out, err = capsys.readouterr()
    assert "is of task 'sniah_9', which suite 'sniah' of this ccq-eval does not know" in out
    assert err.count("\n") == 1
    assert sqlite3.connect(target).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 0
    assert main(["tables", "--table", "sniah", "--store", str(target), "--out", str(tmp_path / "t")]) == 0


def test_lm_eval_results_under_a_label_that_holds_the_cell_are_refused(tmp_path, capsys):
    store = small_store(tmp_path / "s.db")
    (run_id,) = sqlite3.connect(store).execute("SELECT id FROM runs").fetchone()
    assert main(["export", run_id, "--format", "lm-eval", "--store", str(store), "--out", str(tmp_path / "x")]) == 0
    (exported,) = (tmp_path / "x").rglob("results_*.json")
    capsys.readouterr()
    assert main(["ingest", str(exported), "--store", str(store), "--label", "gla"]) == 1
    out = capsys.readouterr().out
    assert "sniah_1 at 1024: label 'gla' already holds a result for it; ingest under another --label" in out
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 1
    assert main(["ingest", str(exported), "--store", str(store), "--label", "gla (lm-eval)"]) == 0
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM units").fetchone()[0] == 2


def test_deleting_the_run_that_computed_a_reused_result_leaves_the_reusers_holding_it(tokenizer_dir, tmp_path, capsys):
    store = tmp_path / "s.db"
    for label in ("A", "B", "C"):
        assert run_suite(oracle_request(store, tasks="1", label=label), oracle_loader(tokenizer_dir),
                         out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    units = dict(db.execute("SELECT r.label, u.id FROM units u JOIN runs r ON r.id = u.run_id").fetchall())
    reused = dict(db.execute("SELECT id, reused_from FROM units").fetchall())
    assert reused[units["B"]] == reused[units["C"]] == units["A"]  # B and C reuse what A computed
    (run_a,) = db.execute("SELECT id FROM runs WHERE label = 'A'").fetchone()
    assert main(["runs", "--delete", run_a, "--store", str(store)]) == 0
    after = dict(db.execute("SELECT id, reused_from FROM units").fetchall())
    assert set(after) == {units["B"], units["C"]}
    assert after[units["B"]] is None and after[units["C"]] == units["B"]  # the earliest holds it; no dangling id
    assert db.execute("SELECT COUNT(*) FROM metrics WHERE unit_id = ?", (units["B"],)).fetchone()[0] > 0
    assert main(["tables", "--table", "sniah", "--store", str(store), "--out", str(tmp_path / "t"), "--format",
                 "csv"]) == 0
    assert {line.split(",")[0] for line in (tmp_path / "t" / "sniah.csv").read_text().splitlines()[1:]} == {"B", "C"}
