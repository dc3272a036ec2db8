"""Faults a cluster or a broken checkpoint produces: a number that cannot be trusted fails its unit
(never stored, never a store error) and the run goes on; SIGTERM ends a run as Ctrl-C does; a store
that would save nothing, and a dry run, write nothing."""

import json
import signal
import sqlite3
import subprocess

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites import SUITES
from tests.helpers import cli_command, save_checkpoint, tiny_model, wait_for_units
from tests.oracle import ScriptedDriver, oracle_loader, scripted_suite


def nan_checkpoint(tmp_path):
    """A tiny GLA whose every weight is NaN."""
    torch.manual_seed(0)
    model = tiny_model("gla")
    with torch.no_grad():
        for p in model.parameters():
            p.fill_(float("nan"))
    return save_checkpoint(model, tmp_path / "nan")


def counts(store) -> dict:
    db = sqlite3.connect(store)
    return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "units", "metrics", "samples")}


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_a_non_finite_metric_fails_its_unit_and_the_run_goes_on(monkeypatch, tmp_path, bad):
    monkeypatch.setitem(SUITES, "scripted", scripted_suite("scripted", ("scripted_a",), (8, 16, 32)))
    monkeypatch.setattr(ScriptedDriver, "values", {8: 1.0, 16: bad, 32: 3.0})
    store, lines = tmp_path / "s.db", []
    request = RunRequest(model="oracle", suite="scripted", store=str(store), label="x")
    assert run_suite(request, oracle_loader(tmp_path), out=lines.append) == 1
    db = sqlite3.connect(store)
    units = db.execute("SELECT context_length, status, reason FROM units ORDER BY context_length").fetchall()
    assert [(L, s) for L, s, _ in units] == [(8, "complete"), (16, "failed"), (32, "complete")]
    assert units[1][2] == f"NonFiniteMetric: score value is {bad}; the number cannot be trusted"
    assert db.execute("SELECT context_length, value FROM metrics ORDER BY 1").fetchall() == [(8, 1.0), (32, 3.0)]
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "failed"


@pytest.mark.e2e
def test_nan_weights_fail_every_sniah_unit_with_the_reason_not_a_store_error(tmp_path, capsys):
    folder = nan_checkpoint(tmp_path)
    store = tmp_path / "s.db"
    code = main(["--model", str(folder), "--suite", "sniah", "--tasks", "1", "--lengths", "1k,2k", "--samples", "2",
                 "--store", str(store), "--device", "cpu"])
    captured = capsys.readouterr()
    assert code == 1 and "Traceback" not in captured.err and "free disk space" not in captured.err
    db = sqlite3.connect(store)
    reasons = [r for (r,) in db.execute("SELECT reason FROM units WHERE status = 'failed'")]
    assert len(reasons) == 2 and all("answer_nll value is nan" in r for r in reasons)
    assert counts(store)["metrics"] == 0 and db.execute("SELECT status FROM runs").fetchone()[0] == "failed"


@pytest.mark.e2e
@pytest.mark.processes
def test_sigterm_ends_the_run_as_interrupted_and_it_resumes(tmp_path):
    cmd, env, store = cli_command(tmp_path, "gla", samples=10)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_units(store, proc, 1)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 143 and "Traceback" not in err
    assert "terminated (SIGTERM); finished units: sniah_1@1024" in out
    db = sqlite3.connect(store)
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
    assert {s for (s,) in db.execute("SELECT status FROM units")} == {"complete"}
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    assert counts(store)["units"] == 6


@pytest.mark.parametrize("path", ["", " ", ":memory:", "file::memory:"])
def test_a_store_that_would_save_nothing_is_refused(path, capsys):
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--store", path, "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    if not path.strip():  # an empty value is refused as such, before anything reads it as a path
        assert err == f"ccq-eval: error: --store {path!r}: an empty value; give one, or leave --store out"
    else:
        assert err == f"ccq-eval: error: store {path!r}: not a file; pass --store PATH (default results/ccq.db)"


def test_a_dry_run_creates_no_store(tmp_path, capsys):
    store = tmp_path / "new" / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "2",
                 "--store", str(store), "--device", "cpu", "--dry-run"]) == 0
    assert capsys.readouterr().out.strip().endswith(f"1 to run, 0 already complete in {store}")
    assert not store.exists()


def test_ctrl_c_during_start_up_is_one_line_not_a_traceback(monkeypatch, capsys):
    import ccq_eval.run as run

    def interrupted(*_, **__):
        raise KeyboardInterrupt

    monkeypatch.setattr(run, "run_suite", interrupted)
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah"]) == 130
    assert capsys.readouterr().err == "ccq-eval: interrupted before any unit ran; nothing was written\n"


def test_a_fetched_corpus_edited_after_freezing_is_refused_not_used(tmp_path, capsys):
    from ccq_eval.data.cache import cache_root, freeze

    path = cache_root() / "longppl" / "pg19.jsonl"
    freeze(path, [{"text": "word " * 3000}], {"corpus": "pg19"})
    path.write_text(path.read_text().replace("word", "WORD", 1))
    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "longppl", "--tasks", "pg19", "--lengths", "1k",
                 "--store", str(store), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert "does not match its sha256 sidecar" in err and "ccq-eval data fetch longppl" in err and "\n" not in err
    assert not store.exists()


def test_a_shipped_corpus_edited_in_the_cache_is_rebuilt(tmp_path):
    from ccq_eval.suites.longppl import corpora

    path = corpora.local_path("essays", None)
    original = path.read_text()
    path.write_text(original.replace("a", "b"))
    assert corpora.local_path("essays", None) == path and path.read_text() == original


def test_ingest_validates_every_source_before_creating_the_target(tmp_path, capsys):
    target = tmp_path / "target.db"
    bad = tmp_path / "bad.db"
    bad.write_bytes(b"not sqlite at all" * 100)
    assert main(["ingest", str(tmp_path / "missing.db"), "--store", str(target)]) == 2
    assert main(["ingest", str(bad), "--store", str(target)]) == 2
    err = capsys.readouterr().err
    assert "missing.db" in err and "bad.db" in err and "target.db" not in err
    assert not target.exists()


def test_runs_delete_on_a_missing_store_creates_nothing(tmp_path, capsys):
    store = tmp_path / "none.db"
    assert main(["runs", "--delete", "abc", "--store", str(store)]) == 2
    assert "no store" in capsys.readouterr().err and not store.exists()


@pytest.mark.parametrize("label", [r"$\nocommand$ model", "_hidden", "two\nlines", "\x1b[31mred\x07"])
def test_labels_matplotlib_or_markdown_would_misread_render_everywhere(tmp_path, label, capsys):
    from ccq_eval.run import RunRequest

    store = tmp_path / "s.db"
    for seed, name in enumerate(("stand-in", "plain")):  # another seed: another unit, not a skipped one
        assert run_suite(RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, seed=seed,
                                    store=str(store), label=name), oracle_loader(tmp_path), out=lambda *_: None) == 0
    db = sqlite3.connect(store)  # the label as a store from elsewhere may hold it (the flag refuses controls)
    for table in ("runs", "metrics"):
        db.execute(f"UPDATE {table} SET label = ? WHERE label = 'stand-in'", (label,))
    db.commit()
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 0
    assert main(["tables", "--table", "sniah", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    printed = capsys.readouterr().out
    assert not any(not ch.isprintable() and ch != "\n" for ch in printed), repr(printed)  # nothing acts on a terminal
    md = (tmp_path / "t" / "sniah.md").read_text().splitlines()
    assert len(md) == 4  # header, rule, two rows: the label stayed on one line
    tex = (tmp_path / "t" / "sniah.tex").read_text()
    assert "\n\n" not in tex
    assert main(["curves", "--store", str(store), "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "sniah-depth.png").stat().st_size > 1000


def test_a_full_disk_mid_run_leaves_the_run_failed_not_running(tmp_path, monkeypatch):
    from ccq_eval.store import StoreWriteError
    from ccq_eval.store.writes import Writes

    real_write, calls = Writes.write_unit, []

    def filling_write(self, unit, metrics, samples, **kwargs):
        calls.append(unit["task"])
        if len(calls) == 2:
            self.db.execute(f"PRAGMA max_page_count = {self.db.execute('PRAGMA page_count').fetchone()[0]}")
        return real_write(self, unit, metrics, samples, **kwargs)

    monkeypatch.setattr(Writes, "write_unit", filling_write)
    store = tmp_path / "s.db"
    with pytest.raises(StoreWriteError):
        run_suite(RunRequest(model="oracle", suite="sniah", lengths="1k,2k", samples=40, store=str(store), label="o"),
                  oracle_loader(tmp_path), out=lambda *_: None)
    assert sqlite3.connect(store).execute("SELECT status FROM runs").fetchone()[0] == "failed"


def test_a_run_deleted_while_it_runs_stops_with_one_line(tmp_path, capsys, monkeypatch):
    from ccq_eval.store.writes import Writes

    real_write = Writes.write_unit

    def delete_first(self, unit, metrics, samples, **kwargs):
        self.delete_run(unit["run_id"])  # another shell's `ccq-eval runs --delete`
        return real_write(self, unit, metrics, samples, **kwargs)

    monkeypatch.setattr(Writes, "write_unit", delete_first)
    store = tmp_path / "s.db"
    import ccq_eval.run as run

    real_run_suite = run.run_suite
    monkeypatch.setattr(run, "run_suite", lambda request: real_run_suite(request, oracle_loader(tmp_path)))
    assert main(["--model", "oracle", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "2",
                 "--store", str(store)]) == 1
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after the data-building progress bar
    assert err.startswith("ccq-eval: error: store ") and "was deleted while it ran; nothing more is written" in err
    assert counts(store) == {"runs": 0, "units": 0, "metrics": 0, "samples": 0}


def _entry_a_folder(sidecar):
    data = sidecar.with_name(sidecar.name.replace(".meta.json", ".jsonl"))
    data.unlink()
    (data / "x").mkdir(parents=True)


@pytest.mark.parametrize("damage", [lambda s: s.write_text("{not json"), lambda s: s.write_text("[1, 2]"),
                                    lambda s: s.write_text('{"content_sha256": ["x"]}'), _entry_a_folder],
                         ids=["sidecar not JSON", "sidecar a JSON list", "sidecar hash a list", "entry a folder"])
def test_an_unreadable_cache_entry_is_rebuilt_and_the_unit_completes(tmp_path, damage):
    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=3, store=str(store), label="o")
    assert run_suite(request, oracle_loader(tmp_path), out=lambda *_: None) == 0
    from ccq_eval.data.cache import cache_root

    (sidecar,) = (cache_root() / "sniah").glob("*.meta.json")
    damage(sidecar)
    request.force = True  # --force replaces the complete result: one per unit key
    assert run_suite(request, oracle_loader(tmp_path), out=lambda *_: None) == 0
    statuses = [s for (s,) in sqlite3.connect(store).execute("SELECT status FROM units")]
    assert statuses == ["complete"] and json.loads(sidecar.read_text())["content_sha256"]
    assert sidecar.with_name(sidecar.name.replace(".meta.json", ".jsonl")).is_file()


ONE_UNIT = "task = 'longppl_essays' AND context_length = 1024"


@pytest.mark.parametrize("damage,said,units_over", [
    (f"UPDATE metrics SET value = 9e999 WHERE {ONE_UNIT} AND metric = 'perplexity'",
     "longppl_essays@1024) has a perplexity that is not a finite number", 8),
    (f"UPDATE metrics SET value = 'twelve' WHERE {ONE_UNIT} AND metric = 'perplexity'",
     "has a perplexity that is not a finite number (text value", 8),
    (f"UPDATE metrics SET stderr = 'n/a' WHERE {ONE_UNIT} AND metric = 'perplexity'",
     "has a perplexity that is not a finite number", 8),
    (f"UPDATE metrics SET n = 'many' WHERE {ONE_UNIT} AND metric = 'perplexity'",
     "has a perplexity that is not a finite number", 8),
    (f"UPDATE units SET settings = '{{not json' WHERE {ONE_UNIT}", "has settings that are not a JSON object", 8),
    (f"UPDATE units SET settings = '[1, 2]' WHERE {ONE_UNIT}", "has settings that are not a JSON object", 8),
    (f"UPDATE runs SET model_config = 'gla, 2 layers' WHERE id = (SELECT run_id FROM units WHERE {ONE_UNIT})",
     "has a model_config that is not a JSON object", None),
], ids=["infinite value", "text value", "text stderr", "text count", "settings not JSON", "settings a list",
        "model_config not JSON"])
def test_ingest_refuses_what_the_runner_never_writes(tmp_path, capsys, damage, said, units_over):
    """A unit (or run) whose numbers are not finite numbers or whose JSON columns are not JSON objects is refused
    and named; the rest comes over, and tables / curves keep working on the target."""
    import shutil

    from tests.run.test_runner_hostile_inputs_keep_store_rows import FIXTURE_STORE

    source = tmp_path / "src.db"
    shutil.copy(FIXTURE_STORE, source)
    db = sqlite3.connect(source)
    if units_over is None:  # a refused run keeps all its units out
        units_over = db.execute(f"SELECT COUNT(*) FROM units WHERE run_id != (SELECT run_id FROM units WHERE "
                                f"{ONE_UNIT})").fetchone()[0]
    db.execute(damage)
    db.commit()
    target = tmp_path / "t.db"
    assert main(["ingest", str(source), "--store", str(target)]) == 1
    out = capsys.readouterr().out
    assert "refused 1" in out and said in out, out
    assert counts(target)["units"] == units_over
    assert main(["tables", "--store", str(target), "--out", str(tmp_path / "t")]) == 0
    assert main(["curves", "--store", str(target), "--out", str(tmp_path / "c")]) in (0, 2)  # 2: nothing to draw


def test_curves_on_a_store_with_nothing_to_draw_says_so(tmp_path, capsys):
    from ccq_eval.store import Store

    Store(tmp_path / "empty.db").close()
    assert main(["curves", "--store", str(tmp_path / "empty.db"), "--out", str(tmp_path / "f")]) == 0
    assert "no figure to draw" in capsys.readouterr().out and not (tmp_path / "f").exists()


@pytest.mark.e2e
def test_nan_weights_on_the_lm_eval_engine_fail_their_units(tmp_path):
    folder = nan_checkpoint(tmp_path)
    store = tmp_path / "s.db"
    assert main(["--model", str(folder), "--suite", "longppl", "--tasks", "essays", "--lengths", "256,512",
                 "--samples", "1", "--engine", "lm-eval", "--store", str(store), "--device", "cpu"]) == 1
    rows = sqlite3.connect(store).execute("SELECT status, reason FROM units").fetchall()
    assert len(rows) == 2 and all(s == "failed" and "cannot be trusted" in r for s, r in rows)
    assert counts(store)["metrics"] == 0


def test_ingest_of_a_good_then_a_truncated_source_merges_nothing(tmp_path, capsys):
    import shutil

    from tests.run.test_runner_hostile_inputs_keep_store_rows import FIXTURE_STORE

    good, cut = tmp_path / "good.db", tmp_path / "cut.db"
    shutil.copy(FIXTURE_STORE, good)
    data = FIXTURE_STORE.read_bytes()
    cut.write_bytes(data[: len(data) // 2])  # opens (its first page is whole), fails when its rows are read
    target = tmp_path / "t.db"
    assert main(["ingest", str(good), str(cut), "--store", str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error: store ") and "cut.db" in err and "\n" not in err
    assert not target.exists() or counts(target) == {"runs": 0, "units": 0, "metrics": 0, "samples": 0}


def test_an_interrupt_a_library_swallows_still_ends_the_run_at_the_next_unit():
    """The runner checks the recorded signal after every unit (runner.interrupts): a KeyboardInterrupt
    caught inside a unit's code, or a SIGINT ignored at process start (a background job), still stops it."""
    import os

    from ccq_eval.run.runner import Terminated, interrupts

    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a background job
    try:
        with interrupts() as received:
            try:
                os.kill(os.getpid(), signal.SIGINT)
                signal.sigtimedwait([], 0)  # let the handler run here
            except KeyboardInterrupt:
                pass  # what a library's broad handler does
            with pytest.raises(KeyboardInterrupt):
                received.raise_if_received()
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # restored on exit
        with interrupts() as received:
            with pytest.raises(Terminated):
                os.kill(os.getpid(), signal.SIGTERM)
                signal.sigtimedwait([], 0)
            with pytest.raises(Terminated):
                received.raise_if_received()
    finally:
        signal.signal(signal.SIGINT, previous)
