"""A label is the model's name as typed: kept byte-exact in the store and the CSV, escaped only where a terminal,
LaTeX or Markdown would act on it, and then visibly (U+202E shows as \\u202e, never reorders the line); a label
with a control character is refused at the flag in one line."""

from __future__ import annotations

import csv
import sqlite3

import pytest

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from tests.oracle import oracle_loader

LABELS = {"rtl": "ccq\u202egla", "zero-width": "gla\u200b-tiny", "combining": "cafe\u0301-gla", "plain": "gla"}


@pytest.fixture(scope="module")
def labelled(tmp_path_factory, tokenizer_dir):
    folder = tmp_path_factory.mktemp("labels")
    store = folder / "s.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CCQ_EVAL_CACHE", str(folder / "cache"))
        for seed, label in enumerate(LABELS.values()):
            request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, seed=seed,
                                 store=str(store), label=label)
            assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
        assert main(["tables", "--table", "sniah", "--store", str(store), "--out", str(folder / "t")]) == 0
    return store, folder / "t"


def test_the_store_and_the_csv_hold_each_label_byte_exact(labelled):
    store, tables = labelled
    db = sqlite3.connect(store)
    assert sorted(r[0] for r in db.execute("SELECT label FROM runs")) == sorted(LABELS.values())
    assert sorted({r[0] for r in db.execute("SELECT label FROM metrics")}) == sorted(LABELS.values())
    with open(tables / "sniah.csv", newline="", encoding="utf-8") as handle:
        assert sorted(row["label"] for row in csv.DictReader(handle)) == sorted(LABELS.values())


def test_markdown_and_latex_escape_format_characters_visibly_and_keep_accents(labelled):
    _, tables = labelled
    for name in ("sniah.md", "sniah.tex"):
        text = (tables / name).read_text(encoding="utf-8")
        assert "\u202e" not in text and "\u200b" not in text, name  # nothing invisible or reordering reaches it
        assert "u202e" in text and "u200b" in text, name  # shown as its escape
        assert LABELS["combining"] in text, name  # printable: as typed


def test_runs_shows_labels_escaped_and_nothing_that_acts_on_a_terminal(labelled, capsys):
    store, _ = labelled
    assert main(["runs", "--store", str(store)]) == 0
    out = capsys.readouterr().out
    assert not any(not ch.isprintable() for ch in out.replace("\n", "")), repr(out)
    assert "ccq\\u202egla" in out and "gla\\u200b-tiny" in out and LABELS["combining"] in out


@pytest.mark.parametrize("label,shown", [("red\x1b[31m", "U+001B"), ("bell\x07", "U+0007"), ("two\nlines", "U+000A"),
                                         ("   ", "an empty value")])
def test_a_label_with_a_control_character_is_refused_at_the_flag(label, shown, tmp_path, capsys):
    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--label", label, "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ccq-eval: error: --label") and shown in err
    assert not store.exists()
