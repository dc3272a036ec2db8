"""A user's data file that cannot be the one meant is named, before any model loads: a symbolic link that leads
nowhere (its target missing, or a loop) is named as a link, not reported as "not found"; two spellings of one file
(squad.jsonl beside squad.json) are refused naming both, never one read silently. Through `ccq-eval run`: exit 2,
one line, no store."""

from __future__ import annotations

import json
import os

import pytest

from ccq_eval.cli import main

RECORD = {"input": "q?", "context": "c " * 50, "answers": ["a"], "all_classes": None}


def layout(root, case: str):
    folder = root / "data" / "longbench"
    folder.mkdir(parents=True)
    if case == "dangling":
        os.symlink(root / "elsewhere.jsonl", folder / "qasper.jsonl")
        return "is a symbolic link that points at"
    if case == "loop":
        os.symlink(folder / "qasper.jsonl", folder / "qasper.jsonl")
        return "is a symbolic link that loops"
    (folder / "qasper.jsonl").write_text(json.dumps(RECORD) + "\n")
    (folder / "qasper.json").write_text(json.dumps([RECORD]))
    return "two files for it, "


@pytest.mark.parametrize("case", ["dangling", "loop", "two files"])
def test_a_file_that_cannot_be_the_one_meant_is_named(case, tmp_path, capsys):
    said = layout(tmp_path, case)
    store = tmp_path / "s.db"
    code = main(["--model", "zoo:gla-tiny", "--suite", "longbench", "--tasks", "qasper", "--data-dir",
                 str(tmp_path / "data"), "--store", str(store), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "qasper.json" in err and "\n" not in err and "not found" not in err, err
    if case == "two files":
        assert "qasper.jsonl" in err and "qasper.json'" in err
    assert not store.exists()


def test_the_lm_suites_files_are_checked_the_same_way(tmp_path):
    from ccq_eval.data.local import LocalFileError
    from ccq_eval.suites.lm.data import local_file

    folder = tmp_path / "lm"
    folder.mkdir()
    (folder / "piqa.jsonl").write_text("{}\n")
    assert local_file("piqa", str(tmp_path)) == folder / "piqa.jsonl"
    (folder / "piqa.json.gz").write_bytes(b"")
    with pytest.raises(LocalFileError, match="two files for it"):
        local_file("piqa", str(tmp_path))
