"""Inputs that once got a message naming the wrong cause, more than one line, or a silent surprise: each now
names its real cause in one line, is refused up front, or is recorded and said."""

from __future__ import annotations

import json
import os
import sqlite3

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.run import run_suite
from tests.helpers import oracle_request, save_checkpoint, tiny_model
from tests.oracle import oracle_loader


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ccq-eval: error: "), err
    return err


def test_a_wal_folder_beside_an_intact_store_is_named_not_called_unreadable(tokenizer_dir, tmp_path, capsys):
    store = tmp_path / "A.db"
    assert run_suite(oracle_request(store, tasks="1"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    sqlite3.connect(store).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    os.remove(f"{store}-wal") if os.path.exists(f"{store}-wal") else None
    os.mkdir(f"{store}-wal")
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 2
    err = one_line_error(capsys)
    assert "A.db-wal beside it, where SQLite keeps its write-ahead log, is not a file" in err
    assert "not a readable" not in err
    os.rmdir(f"{store}-wal")
    assert main(["runs", "--store", str(store)]) == 0  # the store itself was intact


def test_an_ingest_that_refuses_rows_ends_with_an_error_line(tokenizer_dir, tmp_path, capsys):
    source = tmp_path / "src.db"
    assert run_suite(oracle_request(source, tasks="1"), oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    db = sqlite3.connect(source)
    db.execute("UPDATE runs SET weights_sha256 = ''")
    db.commit()
    capsys.readouterr()
    assert main(["ingest", str(source), "--store", str(tmp_path / "t.db")]) == 1
    captured = capsys.readouterr()
    assert "refused 1: run" in captured.out and "lacks weights_sha256" in captured.out
    assert captured.err.startswith("ccq-eval: error: ingest refused") and captured.err.count("\n") == 1


def test_a_shard_with_no_units_says_so_and_writes_nothing(tokenizer_dir, tmp_path):
    from ccq_eval.suites.base import SuiteError

    store = tmp_path / "s.db"
    with pytest.raises(SuiteError, match=r"--shard 2/4: this shard holds no units \(the run has 1 task group, .*use "
                                         r"at most 1 shards"):
        run_suite(oracle_request(store, tasks="1", shard="2/4"), oracle_loader(tokenizer_dir), out=lambda *_: None)
    assert not store.exists()


def test_a_dangling_symlink_named_like_a_repository_is_a_local_path(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "org").mkdir()
    os.symlink(tmp_path / "gone", tmp_path / "org" / "name")
    assert main(["--model", "org/name", "--suite", "sniah", "--store", str(tmp_path / "s.db")]) == 2
    err = one_line_error(capsys)
    assert "a symbolic link to" in err and "which does not exist" in err and "hub" not in err.split(";")[0]


def test_local_lm_records_missing_a_field_are_one_line(tmp_path, capsys):
    (tmp_path / "lm").mkdir()
    (tmp_path / "lm" / "piqa.jsonl").write_text(json.dumps({"sol1": "a", "sol2": "b", "label": 0}) + "\n")
    assert main(["--model", "zoo:gla-tiny", "--suite", "lm", "--tasks", "piqa", "--data-dir", str(tmp_path),
                 "--store", str(tmp_path / "s.db")]) == 2
    assert "'goal' is undefined" in one_line_error(capsys)


def test_a_needle_moved_off_its_depth_is_stored_where_it_went_and_said(tokenizer_dir, tmp_path):
    from ccq_eval.store import Store

    haystack = tmp_path / "haystack.txt"  # words and no sentence boundary: the needle goes to an end
    haystack.write_text(" ".join(f"word{i}" for i in range(3000)))
    lines = []
    request = oracle_request(tmp_path / "s.db", tasks="2", samples=6, options={"haystack": str(haystack)})
    assert run_suite(request, oracle_loader(tokenizer_dir), out=lines.append) == 0
    store = Store(tmp_path / "s.db", readonly=True)
    (unit,) = store.reads.units()
    fields = [s.fields for s in store.reads.samples(unit.id)]
    assert {f["depth_used"] for f in fields} <= {0.0, 100.0}  # where it went: the start or the end
    moved = [f for f in fields if abs(f["depth_used"] - f["depth"]) > 25]
    assert moved and f"{len(moved)} of 6 needles sit more than 25 points" in unit.settings["depth_warning"]
    assert any("needles sit more than" in line for line in lines)  # said beside the unit


def test_depth_used_equals_the_drawn_depth_on_a_haystack_of_sentences():
    from ccq_eval.byte_tokenizer import byte_tokenizer
    from ccq_eval.suites.sniah import data as sniah
    from ccq_eval.suites.sniah.haystack import load_haystack

    from ccq_eval.suites.sniah.driver import DEPTH_TOLERANCE

    for length in (1024, 4096):  # at 1K a few sentences: within one sentence's share of the drawn depth
        for record in sniah.generate("sniah_2", byte_tokenizer(), length, 12, seed=0, haystack=load_haystack()):
            gap = abs(sniah.depth_used("sniah_2", record) - record["depth"])
            assert gap < (DEPTH_TOLERANCE if length == 1024 else 5), (length, record["depth"], gap)


def test_a_length_past_a_rotary_models_trained_positions_is_recorded_and_said(tmp_path):
    from ccq_eval.run import RunRequest
    from ccq_eval.store import Store
    from tests.suites.longppl.test_longppl import WORDS, write_corpus

    torch.manual_seed(0)
    model = save_checkpoint(tiny_model("llama", max_position_embeddings=64), tmp_path / "m")
    write_corpus(tmp_path / "data" / "longppl", "pg19", [" ".join(WORDS * 40)] * 2)
    data = tmp_path / "data"
    lines = []
    request = RunRequest(model=str(model), suite="longppl", tasks="pg19", lengths="64,256", samples=1,
                         store=str(tmp_path / "s.db"), data_dir=str(data), device="cpu")
    assert run_suite(request, out=lines.append) == 0
    settings = {u.context_length: u.settings for u in Store(tmp_path / "s.db", readonly=True).reads.units()}
    assert "positions_warning" not in settings[64]
    assert settings[256]["positions_warning"].startswith("256 tokens pass the model's 64 trained positions")
    assert any("64 trained positions" in line for line in lines)
