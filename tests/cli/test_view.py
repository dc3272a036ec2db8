"""`ccq-eval view`'s output path and inputs: the report never replaces the store or a file ccq-eval did not write, a
write that fails is one line, a read-only store is read, labels are taken as stored."""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from ccq_eval.cli import main
from tests.report_store import build_store


@pytest.fixture
def store(tmp_path) -> Path:
    build_store(tmp_path / "S.db", labels=("A", "B, with a comma"), sniah_tasks=("sniah_1",), lengths=(1024,),
                samples=3, longbench_tasks=(), longppl_corpora=(), lm_tasks=()).close()
    return tmp_path / "S.db"


def view(capsys, *args) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(["view", *args])
    out, err = capsys.readouterr()
    return code, out, err


def refused(capsys, *args) -> str:
    code, _, err = view(capsys, *args)
    assert code == 2 and err.count("\n") == 1 and err.startswith("ccq-eval: error: "), (code, err)
    return err


def test_the_store_itself_is_never_the_report(store, capsys):
    before = store.read_bytes()
    assert "is the store itself" in refused(capsys, "--store", str(store), "--out", str(store))
    link = store.with_name("link.html")
    link.symlink_to(store)  # the same file under another name
    assert "is the store itself" in refused(capsys, "--store", str(store), "--out", str(link))
    assert store.read_bytes() == before


def test_a_file_ccq_eval_did_not_write_is_not_replaced_and_its_own_report_is(store, tmp_path, capsys):
    mine = tmp_path / "analysis.py"
    mine.write_text("x = 1\n")
    assert "is not a report ccq-eval wrote" in refused(capsys, "--store", str(store), "--out", str(mine))
    assert mine.read_text() == "x = 1\n"
    report = tmp_path / "r.html"
    assert view(capsys, "--store", str(store), "--out", str(report))[0] == 0
    assert view(capsys, "--store", str(store), "--out", str(report))[0] == 0  # its own report: rewritten
    old = tmp_path / "old.html"  # a report written before the generator mark: its title names it
    old.write_text("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<title>ccq-eval report</title>\n")
    assert view(capsys, "--store", str(store), "--out", str(old))[0] == 0


def test_a_path_under_a_file_names_that_file(store, tmp_path, capsys):
    (tmp_path / "notes.txt").write_text("n")
    err = refused(capsys, "--store", str(store), "--out", str(tmp_path / "notes.txt" / "report.html"))
    assert "'notes.txt' is a file, so nothing can be written under it" in err.replace(str(tmp_path) + "/", "")


@pytest.mark.parametrize("failure", [OSError(errno.EDQUOT, "Disk quota exceeded"),
                                     OSError(errno.ENOENT, "No such file or directory")])
def test_a_write_that_fails_is_one_line_and_leaves_nothing(store, tmp_path, capsys, monkeypatch, failure):
    import ccq_eval.data.cache as cache

    real = os.replace

    def refuse(src, dst):
        if str(dst).endswith("out.html"):
            raise failure
        return real(src, dst)

    monkeypatch.setattr(cache.os, "replace", refuse)
    err = refused(capsys, "--store", str(store), "--out", str(tmp_path / "out.html"))
    assert failure.strerror in err and "nothing was written there" in err
    assert not any(p.name.startswith("out.html") for p in tmp_path.iterdir())


def test_a_path_that_refuses_writes_is_one_line(store, capsys):
    assert "could not be written" in refused(capsys, "--store", str(store), "--out", "/proc/report.html")


def test_ctrl_c_while_writing_says_no_report_was_written(store, tmp_path, capsys, monkeypatch):
    import ccq_eval.view as report_view

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(report_view, "write_report", interrupted)
    code, _, err = view(capsys, "--store", str(store), "--out", str(tmp_path / "r.html"))
    assert code == 130 and err == "ccq-eval: view interrupted; no report was written\n"


def test_a_label_against_itself_is_refused(store, capsys):
    assert "a label against itself" in refused(capsys, "--store", str(store), "--compare", "A", "A")


def test_a_stored_label_holding_a_comma_can_be_selected(store, tmp_path, capsys):
    import json
    import re

    out = tmp_path / "r.html"
    assert view(capsys, "--store", str(store), "--labels", "B, with a comma", "--out", str(out))[0] == 0
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', out.read_text(), re.S).group(1))
    assert {r["label"] for r in data["runs"]} == {"B, with a comma"}
    assert view(capsys, "--store", str(store), "--labels", "A", "--labels", "B, with a comma", "--out", str(out))[0] == 0


def make_read_only(folder: Path) -> None:
    """The folder and its files unwritable, for root too (chattr's immutable flag) or by their modes."""
    if os.geteuid() == 0:
        subprocess.run(["chattr", "+i", *map(str, folder.iterdir()), str(folder)], check=True)
    else:
        for path in folder.iterdir():
            path.chmod(0o444)
        folder.chmod(0o555)


def writable_again(folder: Path) -> None:
    if os.geteuid() == 0:
        subprocess.run(["chattr", "-i", str(folder), *map(str, folder.iterdir())], check=True)
    else:
        folder.chmod(0o755)


def test_a_store_in_a_folder_nobody_may_write_is_read(store, tmp_path, capsys):
    shared = tmp_path / "share"
    shared.mkdir()
    shutil.copy(store, shared / "S.db")  # closed cleanly: no -wal or -shm beside it
    make_read_only(shared)
    try:
        assert not os.access(shared, os.W_OK) or os.geteuid() == 0
        with pytest.raises(OSError):
            (shared / "probe").write_text("x")
        assert main(["tables", "--table", "sniah", "--store", str(shared / "S.db"), "--out", str(tmp_path / "t")]) == 0
        assert view(capsys, "--store", str(shared / "S.db"), "--out", str(tmp_path / "r.html"))[0] == 0
        assert sorted(p.name for p in shared.iterdir()) == ["S.db"]
    finally:
        writable_again(shared)
