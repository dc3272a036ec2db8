"""`ccq-eval --suite sniah` end to end: scripted oracles through lm-eval, a tiny CCQ-GLA through the
CLI, resuming, a SIGKILLed run, and bad input."""

import hashlib
import json
import signal
import sqlite3
import subprocess
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from tests.helpers import byte_tokenizer, cli_command, save_checkpoint, tiny_model, wait_for_units
from tests.oracle import OracleLM, oracle_loader



@pytest.fixture(scope="module")
def tiny_ccq_dir(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("ccq_gla"), tmp_path_factory.mktemp("ckpt") / "tiny-ccq-gla")


def scores(store: Path) -> dict:
    db = sqlite3.connect(store)
    rows = db.execute("SELECT task, context_length, value FROM metrics WHERE metric = 'score'").fetchall()
    return {(t, L): v for t, L, v in rows}


@pytest.mark.parametrize("wrong,expected", [(False, 100.0), (True, 0.0)])
def test_oracle_scores_100_and_a_wrong_oracle_0(tokenizer_dir, tmp_path, wrong, expected):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="oracle", suite="sniah", lengths="1k,2k", samples=8, store=str(store), label="oracle")
    assert run_suite(request, oracle_loader(tokenizer_dir, wrong), out=lambda *_: None) == 0
    assert scores(store) == {(t, L): expected for t in ("sniah_1", "sniah_2", "sniah_3") for L in (1024, 2048)}
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM samples").fetchone()[0] == 6 * 8
    fields = [json.loads(f) for (f,) in db.execute("SELECT fields FROM samples")]
    assert all(0 <= f["depth"] <= 100 and f["prompt_tokens"] + 128 <= 2048 for f in fields)
    assert not (tmp_path / "raw").exists()  # no lm-eval output: the suite calls the model's engine itself


def test_oracle_sees_the_exact_generated_prompts(tokenizer_dir, tmp_path):
    """What the model is handed is input + ' ' + answer prefix, for every generated record."""
    from ccq_eval.suites.sniah import data as sniah
    from ccq_eval.suites.sniah.haystack import load_haystack

    seen = OracleLM()

    def load(request, max_length):
        evaluand = oracle_loader(tokenizer_dir)(request, max_length)
        evaluand.generator = seen
        return evaluand

    run_suite(RunRequest(model="oracle", suite="sniah", tasks="2", lengths="1k", samples=5, store=str(tmp_path / "s.db")),
              load, out=lambda *_: None)
    records = sniah.load_or_generate("sniah_2", byte_tokenizer(), 1024, 5, 0, load_haystack())[0]
    assert sorted(seen.prompts) == sorted(sniah.prompt_of(r) for r in records)


@pytest.mark.e2e
def test_tiny_ccq_gla_end_to_end_with_pinned_predictions(tiny_ccq_dir, tmp_path, capsys):
    store = tmp_path / "ccq.db"
    argv = ["--model", str(tiny_ccq_dir), "--suite", "sniah", "--lengths", "1k,2k", "--samples", "20",
            "--store", str(store), "--device", "cpu"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "tiny-ccq-gla" in out and out.count("complete") >= 6
    db = sqlite3.connect(store)
    run = db.execute("SELECT label, model_spec, weights_sha256, dtype, device, status, versions FROM runs").fetchone()
    assert run[0] == "tiny-ccq-gla" and run[3:6] == ("float32", "cpu", "complete")
    assert run[2] == hashlib.sha256((tiny_ccq_dir / "model.safetensors").read_bytes()).hexdigest()
    assert set(json.loads(run[6])) >= {"torch", "transformers", "fla", "lm_eval", "ccq_eval"}
    predictions = db.execute(
        "SELECT u.task, u.context_length, s.idx, s.prediction FROM samples s JOIN units u ON u.id = s.unit_id "
        "ORDER BY u.task, u.context_length, s.idx").fetchall()
    assert len(predictions) == 120
    digest = hashlib.sha256(json.dumps(predictions).encode()).hexdigest()
    # greedy CPU decoding of a seeded random model is deterministic: these are its outputs
    assert digest == PINNED_PREDICTIONS_SHA256, digest
    assert scores(store) == {(t, L): 0.0 for t in ("sniah_1", "sniah_2", "sniah_3") for L in (1024, 2048)}

    # a rerun skips every unit and writes nothing
    assert main(argv) == 0
    assert "already complete" in capsys.readouterr().out
    assert db.execute("SELECT COUNT(*) FROM units").fetchone()[0] == 6
    # tables and the heatmap from this store
    assert main(["tables", "--store", str(store), "--format", "latex", "--ci", "--out", str(tmp_path / "t")]) == 0
    tex = (tmp_path / "t" / "sniah.tex").read_text()
    assert "\\toprule" in tex and "tiny-ccq-gla" in tex and "S2 (ccq-essays) 2K" in tex
    assert main(["curves", "--store", str(store), "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "sniah-depth.png").stat().st_size > 5000


PINNED_PREDICTIONS_SHA256 = "7c7ae65b356f010ac7d1a1a1f6071415ffd2d19a2e62ac10d96f279921644302"


@pytest.mark.e2e
@pytest.mark.processes
def test_sigkill_mid_run_then_resume(tmp_path):
    cmd, env, store = cli_command(tmp_path, "ccq_gla", samples=12)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_units(store, proc, 2)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    db = sqlite3.connect(store)
    killed_units = db.execute("SELECT COUNT(*) FROM units").fetchone()[0]
    assert 2 <= killed_units < 6, killed_units
    assert db.execute("SELECT status FROM runs").fetchone()[0] == "running"  # the killed run's record
    assert subprocess.run(cmd, env=env, capture_output=True).returncode == 0
    rows = db.execute("SELECT task, context_length, COUNT(*) FROM units WHERE status = 'complete' "
                      "GROUP BY task, context_length").fetchall()
    assert len(rows) == 6 and all(count == 1 for *_, count in rows)
    per_unit = db.execute("SELECT u.id, COUNT(s.idx), COUNT(DISTINCT s.idx) FROM units u "
                          "JOIN samples s ON s.unit_id = u.id GROUP BY u.id").fetchall()
    assert all(n == 12 and distinct == 12 for _, n, distinct in per_unit)
    assert db.execute("SELECT COUNT(*) FROM metrics WHERE metric = 'score'").fetchone()[0] == 6


# --- bad input: one line on stderr, exit 2, nothing written ------------------------------------------------

def _bad(tmp_path, tiny_ccq_dir, **changes):
    argv = {"--model": str(tiny_ccq_dir), "--suite": "sniah", "--lengths": "1k", "--samples": "2",
            "--store": str(tmp_path / "ccq.db"), "--device": "cpu", **changes}
    return [x for k, v in argv.items() if v is not None for x in (k, v)]


@pytest.mark.parametrize("changes,message", [
    ({"--suite": "nosuch"}, "--suite 'nosuch': unknown suite; available: lm, sniah"),
    ({"--tasks": "sniah_9"}, "--tasks: 'sniah_9' is not a task of suite 'sniah'"),
    ({"--lengths": "1k,two"}, "--lengths '1k,two': 'two' is not a length"),
    ({"--lengths": "200"}, "--lengths: 200 tokens cannot hold every sniah_1 prompt"),
    ({"--samples": "0"}, "argument --samples: 0 is outside [1, 10000000]"),
    ({"--model": "/no/such/model"}, "no such path"),
    ({"--haystack": "HAYSTACK_SHORT"}, "too short for a haystack"),
    ({"--haystack": "HAYSTACK_BINARY"}, "not UTF-8 text"),
    ({"--device": "cuda"}, "CUDA is not available"),
])
def test_bad_input(tmp_path, tiny_ccq_dir, capsys, changes, message):
    short, binary = tmp_path / "short.txt", tmp_path / "bin.txt"
    short.write_text("Just a few words. " * 10)
    binary.write_bytes(b"\xff\xfe\x00\x01" * 100)
    changes = {k: {"HAYSTACK_SHORT": str(short), "HAYSTACK_BINARY": str(binary)}.get(v, v) for k, v in changes.items()}
    assert main(_bad(tmp_path, tiny_ccq_dir, **changes)) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("ccq-eval: error:")
    assert not (tmp_path / "ccq.db").exists()


def test_corrupt_store_is_refused(tmp_path, tiny_ccq_dir, capsys):
    store = tmp_path / "ccq.db"
    store.write_bytes(b"this is not a database" * 100)
    before = store.read_bytes()
    assert main(_bad(tmp_path, tiny_ccq_dir)) == 2
    err = capsys.readouterr().err.strip()
    assert "not a readable ccq-eval store" in err and "\n" not in err
    assert store.read_bytes() == before
    assert main(["tables", "--store", str(store)]) == 2


def test_unwritable_store_is_refused_and_left_as_it_was(tmp_path, tokenizer_dir, capsys, monkeypatch):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, store=str(store))
    assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    before = scores(store)
    assert main(["--model", "x", "--suite", "sniah"]) == 2  # (a missing model is caught before the store)
    capsys.readouterr()
    from ccq_eval.store import StoreError
    from ccq_eval.store.connection import Connection

    # the file opened as a read-only filesystem (or a root-owned copy) gives it: every write refused by SQLite
    real_open = Connection._open
    monkeypatch.setattr(Connection, "_open", lambda self, target, uri: real_open(
        self, Path(self.path).resolve().as_uri() + "?mode=ro", True))
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="2k", samples=2, store=str(store))
    with pytest.raises(StoreError, match="cannot write"):
        run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None)
    monkeypatch.undo()
    assert scores(store) == before


def test_a_prompt_that_would_be_cut_fails_its_unit(tiny_ccq_dir, tmp_path, monkeypatch):
    """If a prompt does not fit its unit's budget with the tokens to generate, the unit fails with the reason; it is
    not cut (a frozen prompt made longer than its length)."""
    from ccq_eval.suites.sniah import driver as sniah_driver

    real = sniah_driver.prompt_of
    monkeypatch.setattr(sniah_driver, "prompt_of", lambda doc: "x" * 600 + real(doc))
    store = tmp_path / "ccq.db"
    code = main(["--model", str(tiny_ccq_dir), "--suite", "sniah", "--tasks", "1", "--lengths", "1k",
                 "--samples", "2", "--store", str(store), "--device", "cpu"])
    assert code == 1
    status, reason = sqlite3.connect(store).execute("SELECT status, reason FROM units").fetchone()
    assert status == "failed" and "PromptTooLong" in reason and "would be truncated" in reason
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0


def test_runs_lists_and_deletes(tokenizer_dir, tmp_path, capsys):
    store = tmp_path / "ccq.db"
    run_suite(RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, store=str(store)),
              oracle_loader(tokenizer_dir), out=lambda *_: None)
    run_id = sqlite3.connect(store).execute("SELECT id FROM runs").fetchone()[0]
    assert main(["runs", "--store", str(store)]) == 0
    assert run_id in capsys.readouterr().out
    assert main(["runs", "--store", str(store), "--delete", run_id]) == 0
    db = sqlite3.connect(store)
    assert [db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "units", "metrics", "samples")] == [0] * 4
    assert main(["runs", "--store", str(store), "--delete", run_id]) == 2


def test_dry_run_lists_units_and_writes_nothing(tokenizer_dir, tmp_path):
    store = tmp_path / "ccq.db"
    run_suite(RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, store=str(store)),
              oracle_loader(tokenizer_dir), out=lambda *_: None)
    lines = []
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k,2k", samples=2, store=str(store),
                         dry_run=True)
    assert run_suite(request, oracle_loader(tokenizer_dir), out=lines.append) == 0
    assert any("1024" in line and "done" in line for line in lines)
    assert any("2048" in line and "to run" in line for line in lines)
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


def test_data_is_built_once_per_unit_and_the_plugin_reads_the_frozen_file(tokenizer_dir, tmp_path, monkeypatch):
    """One generation per unit, none in the plugin, and no tokenizer loaded there (no second tokenisation)."""
    from ccq_eval.data import tokenizers
    from ccq_eval.suites.sniah import data

    generated, loaded = [], []
    real_generate = data.generate
    monkeypatch.setattr(data, "generate", lambda *a, **k: generated.append(a[0]) or real_generate(*a, **k))
    monkeypatch.setattr(tokenizers, "load_tokenizer", lambda path: loaded.append(path))
    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="sniah", tasks="1,2", lengths="1k,2k", samples=3, store=str(store),
                         label="oracle")
    assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    assert sorted(generated) == ["sniah_1", "sniah_1", "sniah_2", "sniah_2"] and loaded == []
    assert scores(store) == {(t, L): 100.0 for t in ("sniah_1", "sniah_2") for L in (1024, 2048)}


def test_stock_lm_eval_builds_the_records_ccq_eval_builds(tokenizer_dir):
    """tasks/sniah under stock lm-eval (--include_path, metadata as its README says): the generated YAML names
    the task's data function and it builds, from the metadata, the records ccq-eval's driver evaluates."""
    from lm_eval.tasks import TaskManager, get_task_dict
    from transformers import AutoTokenizer

    from ccq_eval.task_plugins import TASKS_DIR
    from ccq_eval.suites.sniah import data as sniah
    from ccq_eval.suites.sniah.haystack import load_haystack

    manager = TaskManager(include_path=str(TASKS_DIR / "sniah"), include_defaults=False,
                          metadata={"tokenizer": str(tokenizer_dir), "max_seq_lengths": [1024], "num_samples": 3,
                                    "seed": 5, "max_length": 1024})  # no checkpoint to read the context from
    for task in ("sniah_1", "sniah_3"):
        built = get_task_dict([task], manager)[task]
        from_lm_eval = [dict(r) for r in built.dataset["test"]]
        tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
        hay = load_haystack() if task == "sniah_3" else None
        ours = sniah.load_or_generate(task, tokenizer, 1024, 3, 5, hay)[0]
        assert [r["input"] for r in from_lm_eval] == [r["input"] for r in ours] and len(ours) == 3
        assert [r["outputs"] for r in from_lm_eval] == [r["outputs"] for r in ours]
