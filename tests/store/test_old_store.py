"""A store written before the package redesign (tests/fixtures/store_v1, by the commands beside it)
resumes with nothing rerun: every unit key is computed as it was. Two exceptions are on purpose:
LongBench's lcc moved to task version 1.1 (the official prompt and code similarity), and S-NIAH-2's sentences
are now split with the trained English Punkt model (RULER's), a part of its data's identity; their units run
again (on the shipped essays the split is the same, so S-NIAH-2 reproduces its old number). Rerunning two of its commands into a fresh store reproduces its numbers. The zoo models those
commands name are the weights the store was written with (kept beside it: the shipped zoo has been
retrained since, and a model's weights are part of its units' identity)."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from ccq_eval.cli import main

REPO = Path(__file__).resolve().parents[2]
FIXTURE = REPO / "tests" / "fixtures" / "store_v1"
COMMANDS = json.loads((FIXTURE / "commands.json").read_text())
OLD_ZOO = FIXTURE / "zoo"  # gla-tiny and gdn-tiny as they were when the store was written


def counts(store: Path) -> dict:
    db = sqlite3.connect(store)
    return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "units", "metrics", "samples")}


@pytest.fixture
def old_store(tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)  # the lm command's --data-dir is relative, as it was when the store was written
    monkeypatch.setenv("CCQ_EVAL_ZOO", str(OLD_ZOO))
    store = tmp_path / "old.db"
    shutil.copy(FIXTURE / "store.db", store)
    return store


@pytest.mark.e2e
def test_every_unit_of_the_old_store_is_found_complete(old_store, capsys):
    before = counts(old_store)
    assert before["units"] == 9 and len(COMMANDS) == 5  # four suites, one CCQ override
    expected = ["1 to run, 1 already", "0 to run, 1 already", "0 to run, 2 already", "1 to run, 1 already",
                "0 to run, 2 already"]
    for command, summary in zip(COMMANDS, expected):
        assert main([*command, "--store", str(old_store), "--dry-run"]) == 0
        lines = capsys.readouterr().out.strip().splitlines()
        assert lines[-1].startswith(summary), (command, lines)
        if summary.startswith("1 to run"):
            assert [line.split()[0] for line in lines if line.endswith("to run")] in (["longbench_lcc"], ["sniah_2"])
    assert main([*COMMANDS[2], "--store", str(old_store)]) == 0
    assert "all 2 units already complete" in capsys.readouterr().out
    assert counts(old_store) == before


@pytest.mark.e2e
def test_a_changed_setting_is_not_mistaken_for_a_done_unit(old_store, capsys):
    """The check above can fail: one more sample is a new unit."""
    command = [*COMMANDS[0], "--store", str(old_store), "--dry-run"]
    command[command.index("--samples") + 1] = "3"
    assert main(command) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("2 to run, 0 already complete")


def metric_values(store: Path, suite: str) -> dict:
    rows = sqlite3.connect(store).execute(
        "SELECT m.task, m.context_length, m.label, m.metric, m.value FROM metrics m JOIN units u ON u.id = m.unit_id "
        "WHERE u.suite = ?", (suite,)).fetchall()
    return {row[:4]: row[4] for row in rows}


@pytest.mark.e2e
@pytest.mark.parametrize("index,suite", [(0, "sniah"), (3, "longbench")])
def test_rerunning_reproduces_the_old_numbers(tmp_path, monkeypatch, index, suite):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("CCQ_EVAL_ZOO", str(OLD_ZOO))
    fresh = tmp_path / "fresh.db"
    assert main([*COMMANDS[index], "--store", str(fresh)]) == 0
    new = metric_values(fresh, suite)
    changed = {"longbench_lcc"}  # version 1.1 since: another prompt and scorer
    new = {k: v for k, v in new.items() if k[0] not in changed}
    old = {k: v for k, v in metric_values(FIXTURE / "store.db", suite).items()
           if k[2] == "gla-tiny" and k[0] not in changed}
    assert old.keys() == new.keys() and len(old) >= 2
    assert new == pytest.approx(old, rel=1e-6, abs=1e-9)


def test_the_old_store_is_read_as_it_is_and_migrated_when_opened_to_write(tmp_path):
    from ccq_eval.store import SCHEMA_VERSION, Store

    store = tmp_path / "old.db"
    shutil.copy(FIXTURE / "store.db", store)
    before = counts(store)
    old = Store(store, readonly=True)
    assert old.connection.version == 1 and len(old.reads.units()) == 9 and {u.reused_from for u in old.reads.units()} == {None}
    assert {u.seq for u in old.reads.units()} == {None}  # read as it is
    from ccq_eval.report.results import Results

    cells_before = {cell: unit.id for cell, unit in Results(old).cells.items()}
    old.close()
    migrated = Store(store)
    assert migrated.connection.version == SCHEMA_VERSION == 3 and counts(store) == before
    columns = [r[1] for r in sqlite3.connect(store).execute("PRAGMA table_info(units)")]
    assert columns[-2:] == ["reused_from", "seq"]
    indexes = {r[1] for r in sqlite3.connect(store).execute("PRAGMA index_list(units)")}
    assert "units_one_computed_per_key" in indexes and "units_one_complete_per_key" not in indexes
    units = migrated.reads.units()
    assert sorted(u.seq for u in units) == list(range(1, 10))  # numbered in the order the newest was taken before
    assert [u.id for u in sorted(units, key=lambda u: u.seq)] == [u.id for u in sorted(units, key=lambda u: (
        u.finished, u.id))]
    assert {cell: unit.id for cell, unit in Results(migrated).cells.items()} == cells_before  # the same cells shown
    assert Store(store).connection.version == 3  # opening again changes nothing
