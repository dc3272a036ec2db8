"""Merges that never mix or hide (store/merge_rules.py, `ccq-eval ingest`): shards of two models, two seeds or two
commands under one label are refused in one line with nothing written; a job missing a shard is partial in `runs`,
the tables and the report until the shard arrives; which result a cell shows never depends on the order stores are
merged in; a second ingest completes a run merged while it ran; an exported run that did not end whole, or one shard,
stays so when ingested."""

from __future__ import annotations

import sqlite3

import pytest

from ccq_eval.cli import main
from ccq_eval.run import run_suite
from tests.helpers import oracle_request as request
from tests.oracle import oracle_loader


def shard_store(tokenizer_dir, path, index: int, count: int, **options):
    loader = oracle_loader(tokenizer_dir, wrong=options.pop("wrong", False))
    command = options.pop("command", "ccq-eval --model oracle --suite sniah --samples 3")
    shard = f"{index}/{count}"
    assert run_suite(request(path, label="o", shard=shard, command_line=f"{command} --shard {shard}", **options),
                     loader, out=lambda *_: None) == 0
    return path


@pytest.mark.parametrize("second,said", [
    ({"wrong": True}, "label 'o' would hold runs of two models: weights_sha256 differs"),
    ({"seed": 1}, "label 'o' would hold runs of two models: seeds differs"),
    ({"command": "ccq-eval --model oracle --suite sniah --samples 3 --haystack other"},
     "label 'o': shards of one job ran different commands"),
])
def test_shards_that_disagree_under_one_label_are_refused_with_nothing_written(tokenizer_dir, tmp_path, capsys,
                                                                                second, said):
    first = shard_store(tokenizer_dir, tmp_path / "a.db", 0, 2)
    other = shard_store(tokenizer_dir, tmp_path / "b.db", 1, 2, **second)
    merged = tmp_path / "m.db"
    before = [first.read_bytes(), other.read_bytes()]
    capsys.readouterr()
    assert main(["ingest", str(first), str(other), "--store", str(merged)]) == 2
    err = capsys.readouterr().err.strip()
    assert said in err and "\n" not in err and not merged.exists()
    assert [first.read_bytes(), other.read_bytes()] == before
    assert main(["ingest", str(first), "--store", str(merged)]) == 0  # into a store holding one shard: refused too
    held = merged.read_bytes()
    assert main(["ingest", str(other), "--store", str(merged)]) == 2 and merged.read_bytes() == held


def test_a_job_missing_a_shard_is_partial_everywhere_until_it_arrives(tokenizer_dir, tmp_path, capsys):
    from ccq_eval.report.results import Results
    from ccq_eval.store import Store
    from ccq_eval.view.content import report_content

    parts = [shard_store(tokenizer_dir, tmp_path / f"p{i}.db", i, 3) for i in range(3)]
    merged = tmp_path / "m.db"
    assert main(["ingest", str(parts[0]), str(parts[2]), "--store", str(merged)]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", str(merged)]) == 0
    out = capsys.readouterr().out
    assert out.count("partial ") == 2 and "partial: label 'o': shard 1 of 3 is not in this store" in out
    assert main(["tables", "--table", "sniah", "--store", str(merged), "--out", str(tmp_path / "t")]) == 0
    assert "o (partial)" in (tmp_path / "t" / "sniah.md").read_text()
    assert "Partial rows (o: shard 1 of 3 is not in this store)" in (tmp_path / "t" / "sniah.tex").read_text()
    assert "shard 1 of 3 is not in this store" in (tmp_path / "t" / "sniah.csv").read_text()
    content = report_content(Results(Store(merged, readonly=True)))
    assert {run["status"] for run in content["runs"]} == {"partial: shard 1 of 3 is not in this store"}
    assert any(row["label"] == "o (partial)" for table in content["tables"] for row in table["rows"])
    assert main(["ingest", str(parts[1]), "--store", str(merged)]) == 0
    capsys.readouterr()
    assert main(["runs", "--store", str(merged)]) == 0
    assert "partial" not in capsys.readouterr().out
    assert main(["tables", "--table", "sniah", "--store", str(merged), "--out", str(tmp_path / "t2")]) == 0
    assert "partial" not in (tmp_path / "t2" / "sniah.md").read_text()


def test_the_result_a_cell_shows_never_depends_on_the_merge_order(tokenizer_dir, tmp_path):
    """Two results for one cell under one label (another sample count: another unit key): the one that finished
    last shows, whichever store is merged first."""
    from ccq_eval.catalogue import table_frame
    from ccq_eval.store import Store

    early, late = tmp_path / "early.db", tmp_path / "late.db"
    assert run_suite(request(early, tasks="1", samples=2, label="o"), oracle_loader(tokenizer_dir, share=0.5),
                     out=lambda *_: None) == 0
    assert run_suite(request(late, tasks="1", samples=3, label="o"), oracle_loader(tokenizer_dir, share=0.5),
                     out=lambda *_: None) == 0
    with sqlite3.connect(late) as db:  # the later result's value differs: 3 samples here
        db.execute("UPDATE metrics SET value = 12.5 WHERE metric = 'score'")
    shown = []
    for order in ((early, late), (late, early)):
        merged = tmp_path / f"m-{order[0].stem}.db"
        for source in order:
            assert main(["ingest", str(source), "--store", str(merged)]) == 0
        shown.append(table_frame(Store(merged, readonly=True), "sniah").loc["o", "S1 1K"])
    assert shown == [12.5, 12.5]


def test_a_second_ingest_completes_a_run_merged_while_it_ran(tokenizer_dir, tmp_path):
    source = tmp_path / "s.db"
    assert run_suite(request(source, tasks="1", label="o"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    running = tmp_path / "running.db"
    running.write_bytes(source.read_bytes())
    with sqlite3.connect(running) as db:  # as the store looked while the run was still going
        db.execute("UPDATE runs SET status = 'running', finished = NULL")
    merged = tmp_path / "m.db"
    assert main(["ingest", str(running), "--store", str(merged)]) == 0
    status = "SELECT status, finished IS NOT NULL FROM runs"
    assert sqlite3.connect(merged).execute(status).fetchall() == [("running", 0)]
    assert main(["ingest", str(source), "--store", str(merged)]) == 0
    assert sqlite3.connect(merged).execute(status).fetchall() == [("complete", 1)]


def test_an_exported_run_that_did_not_end_whole_or_a_shard_stays_so_when_ingested(tokenizer_dir, tmp_path, capsys):
    interrupted = tmp_path / "i.db"
    assert run_suite(request(interrupted, tasks="1", label="cut"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    with sqlite3.connect(interrupted) as db:
        db.execute("UPDATE runs SET status = 'interrupted'")
    shard = shard_store(tokenizer_dir, tmp_path / "p0.db", 0, 2)
    merged = tmp_path / "m.db"
    for store, out, label in ((interrupted, tmp_path / "ei", "cut"), (shard, tmp_path / "es", "o")):
        run_id = sqlite3.connect(store).execute("SELECT id FROM runs").fetchone()[0]
        assert main(["export", run_id, "--format", "lm-eval", "--store", str(store), "--out", str(out)]) == 0
        assert main(["ingest", str(out), "--label", label, "--store", str(merged)]) == 0
    assert "the run ended interrupted: kept so" in capsys.readouterr().out
    assert dict(sqlite3.connect(merged).execute("SELECT label, status FROM runs")) == {"cut": "interrupted",
                                                                                        "o": "complete"}
    assert main(["runs", "--store", str(merged)]) == 0
    assert "partial: label 'o': shard 1 of 2 is not in this store" in capsys.readouterr().out
