"""`ccq-eval rescore`: the stored predictions scored again without a model. With the scorers unchanged it reproduces
every stored metric and sample exactly (a real model's S-NIAH with its answers' NLL, RULER's multi-needle tasks with
partial scores, LongBench with partly right answers); a changed scorer gives a new unit that records the one it came
from, which the tables then show, and the old unit stays; what cannot be re-scored is said in one line."""

import json
import sqlite3

import pytest

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.store import Store
from tests.oracle import oracle_loader

METRIC_COLUMNS = "metric, value, stderr, n, higher_is_better, is_primary"
SAMPLE_COLUMNS = "idx, prompt_sha256, target, prediction, score, fields"


def unit_rows(store):
    db = sqlite3.connect(store)
    units = db.execute("SELECT id, task, context_length, settings FROM units WHERE status = 'complete' "
                       "ORDER BY rowid").fetchall()
    out = []
    for unit_id, task, length, settings in units:
        metrics = db.execute(f"SELECT {METRIC_COLUMNS} FROM metrics WHERE unit_id = ? ORDER BY metric",
                             (unit_id,)).fetchall()
        samples = db.execute(f"SELECT {SAMPLE_COLUMNS} FROM samples WHERE unit_id = ? ORDER BY idx",
                             (unit_id,)).fetchall()
        out.append({"id": unit_id, "task": task, "length": length, "settings": json.loads(settings),
                    "metrics": metrics, "samples": samples})
    return out


@pytest.fixture(scope="module")
def store(tmp_path_factory, tokenizer_dir):
    """S-NIAH from the zoo's GLA (answer NLLs from its prefill), multi-needle from a half-right oracle."""
    import os

    folder = tmp_path_factory.mktemp("rescore")
    path = folder / "s.db"
    os.environ["CCQ_EVAL_CACHE"] = str(folder / "cache")  # module-wide: the frozen records outlive each test
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1,2", "--lengths", "1k", "--samples", "6",
                 "--store", str(path), "--device", "cpu"]) == 0
    request = RunRequest(model="oracle", suite="multi_niah", tasks="niah_multikey_2,niah_multivalue", lengths="1k", samples=4,
                         store=str(path), label="half")
    assert run_suite(request, oracle_loader(tokenizer_dir, share=0.5), out=lambda *_: None) == 0
    return path, folder / "cache"


@pytest.fixture
def copy(store, tmp_path, monkeypatch):
    path, cache = store
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(cache))
    source = Store(path, readonly=True)
    source.connection.copy_to(tmp_path / "s.db")  # the write-ahead log included
    source.close()
    return tmp_path / "s.db"


def test_unchanged_scorers_reproduce_every_metric_and_sample_exactly(copy, capsys):
    before = unit_rows(copy)
    assert len(before) == 4 and any(m[0] == "answer_nll" for m in before[0]["metrics"])
    assert 50.0 in {row[4] for u in before[2:] for row in u["samples"]}  # partial multi-needle scores
    assert main(["rescore", "--store", str(copy)]) == 0
    out = capsys.readouterr().out
    assert "4 unit(s) re-scored (0 changed), 0 left out" in out
    after = unit_rows(copy)
    assert len(after) == 8
    for old, new in zip(before, after[4:]):
        assert (new["task"], new["length"]) == (old["task"], old["length"])
        assert new["metrics"] == old["metrics"] and new["samples"] == old["samples"]
        assert new["settings"]["rescored_from"] == old["id"]
        assert {k: v for k, v in new["settings"].items() if k != "rescored_from"} == old["settings"]
    runs = Store(copy, readonly=True).reads.runs()
    assert [r.label for r in runs] == ["gla-tiny", "half", "gla-tiny", "half"]
    assert runs[2].command_line == f"ccq-eval rescore --store {copy}" and runs[2].weights_sha256 == runs[0].weights_sha256


def test_a_changed_scorer_writes_a_new_unit_the_tables_show(copy, monkeypatch, capsys):
    from ccq_eval.catalogue import table_frame
    from ccq_eval.suites.sniah import driver

    monkeypatch.setattr(driver, "ruler_string_match", lambda prediction, references: 0.0)  # a stricter scorer
    assert main(["rescore", "--suite", "sniah", "--tasks", "sniah_1", "--store", str(copy)]) == 0
    assert "gla-tiny sniah_1 at 1024: score 0 (" in capsys.readouterr().out
    rows = unit_rows(copy)
    assert len(rows) == 5 and rows[-1]["settings"]["rescored_from"] == rows[0]["id"]
    assert dict((m[0], m[1]) for m in rows[0]["metrics"])["score"] > 0  # the old unit is kept as it was
    shown = table_frame(Store(copy, readonly=True), "sniah")
    (s2,) = [c for c in shown.columns if c.startswith("S2")]
    assert shown.loc["gla-tiny", "S1 1K"] == 0.0 and shown.loc["gla-tiny", s2] > 0


def test_records_gone_from_the_cache_leave_the_unit_out_by_name(copy, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "empty"))
    assert main(["rescore", "--suite", "multi_niah", "--store", str(copy)]) == 1
    captured = capsys.readouterr()
    left = captured.err.strip().splitlines()
    assert len(left) == 2 and left[0].startswith("left out: half niah_multikey_2 at 1024: its frozen records")
    assert "0 unit(s) re-scored" in captured.out and len(unit_rows(copy)) == 4


@pytest.mark.parametrize("argv,message", [
    (["--suite", "longppl"], "--suite longppl: cannot be re-scored: perplexity is the model's likelihood"),
    (["--suite", "efficiency"], "--suite efficiency: cannot be re-scored: its numbers are timings and memory"),
    (["--suite", "lm"], "--suite lm: cannot be re-scored: lm-eval's zero-shot tasks score the model's likelihood"),
    (["--tasks", "sniah_1"], "--tasks needs --suite"),
    (["--suite", "sniah", "--tasks", "sniah_9"], "'sniah_9' is not a task of suite 'sniah'"),
    (["--suite", "niah"], "--suite 'niah': unknown"),
])
def test_what_cannot_be_rescored_is_one_line_and_exit_2(copy, capsys, argv, message):
    before = unit_rows(copy)
    assert main(["rescore", *argv, "--store", str(copy)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error:") and "\n" not in err and message in err, err
    assert unit_rows(copy) == before


def test_a_missing_store_is_one_line(tmp_path, capsys):
    assert main(["rescore", "--store", str(tmp_path / "nope.db")]) == 2
    assert "no such store" in capsys.readouterr().err and not (tmp_path / "nope.db").exists()


def test_longbench_predictions_rescore_to_the_same_numbers(tmp_path, tokenizer_dir, capsys):
    """LongBench's metrics (F1, classification, code similarity) on partly right answers, again from the store."""
    import torch

    from ccq_eval.run import Evaluand
    from ccq_eval.suites.longbench import data as longbench
    from tests.helpers import byte_tokenizer
    from tests.suites.longbench.test_longbench import MappingLM, record

    keys = ("qasper", "trec", "lcc")
    (tmp_path / "longbench").mkdir()
    for key in keys:
        (tmp_path / "longbench" / f"{key}.jsonl").write_text("".join(json.dumps(record(key, i)) + "\n" for i in range(4)))

    def load(request, max_length):
        answers = {}
        for key in keys:
            docs = longbench.build(key, longbench.read_records(tmp_path / "longbench" / f"{key}.jsonl"), byte_tokenizer(),
                                   2048, None)[0]
            for doc in docs:  # right, half right, wrong
                answers[doc["prompt"]] = [doc["answers"][0], doc["answers"][0][: len(doc["answers"][0]) // 2], "no"][
                    doc["index"] % 3]
        provenance = {"weights_sha256": "mapping", "config": {"model_type": "oracle"}, "dtype": "none", "device": "cpu",
                      "ccq_overrides": {}, "versions": {"torch": torch.__version__}}
        model = MappingLM(answers)
        return Evaluand(generator=model, lm=model, tokenizer=byte_tokenizer(), tokenizer_path=str(tokenizer_dir),
                        provenance=provenance)

    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="longbench", tasks=",".join(keys), lengths="2k", store=str(store),
                         data_dir=str(tmp_path), label="mapping")
    assert run_suite(request, load, out=lambda *_: None) == 0
    before = unit_rows(store)
    assert len({round(row[4], 3) for u in before for row in u["samples"]}) > 3  # more than right and wrong
    assert main(["rescore", "--store", str(store)]) == 0
    after = unit_rows(store)
    assert [(u["metrics"], u["samples"]) for u in after[3:]] == [(u["metrics"], u["samples"]) for u in before]


@pytest.mark.parametrize("signum,code,said", [("SIGINT", 130, "interrupted"), ("SIGTERM", 143, "terminated (SIGTERM)")])
def test_an_interrupted_rescore_keeps_what_it_wrote_says_so_and_a_rerun_goes_on(copy, monkeypatch, capsys, signum,
                                                                                   code, said):
    import os
    import signal

    from ccq_eval.run import rescore

    original, calls = rescore.Rescorer.rescore_unit, []

    def rescore_then_signal(self, cell, unit_row, done):
        original(self, cell, unit_row, done)
        calls.append(cell)
        if len(calls) == 2:  # a real signal, delivered to this process as a user's or a scheduler's
            os.kill(os.getpid(), getattr(signal, signum))

    monkeypatch.setattr(rescore.Rescorer, "rescore_unit", rescore_then_signal)
    assert main(["rescore", "--store", str(copy)]) == code
    err = capsys.readouterr().err
    assert f"ccq-eval rescore: {said}; 2 unit(s) were re-scored and written to {copy}" in err
    assert "nothing was written" not in err
    rows = unit_rows(copy)
    assert len(rows) == 6 and sum("rescored_from" in r["settings"] for r in rows) == 2
    statuses = [r.status for r in Store(copy, readonly=True).reads.runs()]
    assert statuses[2:] == ["interrupted"] and "running" not in statuses  # one source run so far: one rescore run

    monkeypatch.setattr(rescore.Rescorer, "rescore_unit", original)
    assert main(["rescore", "--store", str(copy)]) == 0  # the rerun goes on from where it stopped
    out = capsys.readouterr().out
    assert "2 unit(s) re-scored by the interrupted rescore before: kept" in out and "2 unit(s) re-scored (0 changed)" in out
    rows = unit_rows(copy)
    sources = [r["settings"]["rescored_from"] for r in rows if "rescored_from" in r["settings"]]
    assert len(rows) == 8 and sorted(sources) == sorted(r["id"] for r in rows[:4])  # every cell re-scored once


def test_rescore_never_makes_a_store_of_an_empty_file(tmp_path, capsys):
    empty = tmp_path / "empty.db"
    empty.write_bytes(b"")
    assert main(["rescore", "--store", str(empty)]) == 2
    assert "an empty file, not a store" in capsys.readouterr().err and empty.read_bytes() == b""


@pytest.mark.parametrize("clock", ["source ahead", "same millisecond"])
def test_a_rescored_unit_is_newer_than_its_source_whatever_the_clocks_say(copy, monkeypatch, capsys, clock):
    """The newest unit of a cell is the one that finished last, and a rescore is stamped after its source: a rescore
    on a machine whose clock is behind the source's, or inside the source's millisecond, still shows."""
    from ccq_eval.catalogue import table_frame
    from ccq_eval.store import writes
    from ccq_eval.suites.sniah import driver

    db = sqlite3.connect(copy)
    source = unit_rows(copy)[0]
    if clock == "source ahead":
        with db:
            db.execute("UPDATE units SET finished = '2999-01-01T00:00:00.000+00:00' WHERE id = ?", (source["id"],))
    stamp = db.execute("SELECT finished FROM units WHERE id = ?", (source["id"],)).fetchone()[0]
    monkeypatch.setattr(writes, "now", lambda: stamp if clock == "same millisecond" else "2026-01-01T00:00:00.000+00:00")
    monkeypatch.setattr(driver, "ruler_string_match", lambda prediction, references: 0.0)
    assert main(["rescore", "--suite", "sniah", "--tasks", "sniah_1", "--store", str(copy)]) == 0
    capsys.readouterr()
    rescored = db.execute("SELECT finished FROM units WHERE settings LIKE ?", (f'%"rescored_from": "{source["id"]}"%',)
                          ).fetchone()[0]
    assert rescored > stamp
    assert table_frame(Store(copy, readonly=True), "sniah").loc["gla-tiny", "S1 1K"] == 0.0


def test_a_cell_a_newer_version_wrote_is_named_not_skipped_in_silence(copy, capsys):
    """A task (or a suite) this ccq-eval does not know: named and left as it is when the rescore covers everything;
    a rescore narrowed to another suite says nothing of it."""
    db = sqlite3.connect(copy)
    db.execute("UPDATE units SET task = 'sniah_4' WHERE task = 'sniah_2'")
    db.execute("UPDATE metrics SET task = 'sniah_4' WHERE task = 'sniah_2'")
    db.execute("UPDATE units SET suite = 'babel' WHERE task = 'niah_multivalue'")
    db.commit()
    main(["rescore", "--store", str(copy)])
    err = capsys.readouterr().err
    assert "sniah_4 at 1024: task 'sniah_4' is not one of sniah's in this ccq-eval (written by a newer version?)" in err
    assert "niah_multivalue at 1024: suite 'babel' is not one this ccq-eval knows" in err
    main(["rescore", "--suite", "multi_niah", "--store", str(copy)])
    assert "sniah_4" not in capsys.readouterr().err


def test_a_unit_replaced_while_the_rescore_runs_is_named_as_replaced(copy, monkeypatch, capsys):
    """Another process replaces a cell (a --force rerun) after the rescore read the store: the reason says so, not
    that the samples do not match their records."""
    from ccq_eval.run import rescore as rescoring

    original = rescoring.Rescorer.rescore_unit
    replaced = []

    def replace_first(self, cell, unit_row, done):
        if not replaced:  # the first cell's run goes (as a --force rerun's drop does) just before it is scored
            self.store.writes.delete_run(unit_row.run_id)
            replaced.append(unit_row.id)
        return original(self, cell, unit_row, done)

    monkeypatch.setattr(rescoring.Rescorer, "rescore_unit", replace_first)
    main(["rescore", "--suite", "sniah", "--store", str(copy)])
    err = capsys.readouterr().err
    assert "its unit was replaced while this rescore ran" in err and "do not match" not in err
