"""--force never takes another label's result: three labels share one cell (one computes it, two reuse it), then two
of them force a rerun, in every order of who computed, who forces first and who second. After each run every label
holds the cell whole (its metrics and samples, under its own label), exactly one unit computes it, every other label's
unit reuses that one, and the computing unit is the latest forced run's."""

from __future__ import annotations

import itertools
import sqlite3

import pytest

from ccq_eval.run import run_suite
from tests.helpers import oracle_request as request
from tests.oracle import oracle_loader

LABELS = ("A", "B", "C")


def holdings(store) -> dict[str, tuple]:
    """label -> (unit id, run id, reused_from, metric rows under the label, samples) of its complete units."""
    db = sqlite3.connect(store)
    rows = db.execute("SELECT r.label, u.id, u.run_id, u.reused_from FROM units u JOIN runs r ON r.id = u.run_id "
                      "WHERE u.status = 'complete'").fetchall()
    held = {}
    for label, unit_id, run_id, reused_from in rows:
        assert label not in held, f"label {label} holds the cell twice"
        metrics = db.execute("SELECT COUNT(*) FROM metrics WHERE unit_id = ? AND label = ?", (unit_id, label)).fetchone()[0]
        samples = db.execute("SELECT COUNT(*) FROM samples WHERE unit_id = ?", (unit_id,)).fetchone()[0]
        held[label] = (unit_id, run_id, reused_from, metrics, samples)
    return held


def check(store, labels: set[str], computed_by_run: str) -> None:
    held = holdings(store)
    assert set(held) == labels
    computing = [unit for unit, _, reused, *_ in held.values() if reused is None]
    assert len(computing) == 1  # one computed result for the key
    assert all(reused in (None, computing[0]) for _, _, reused, *_ in held.values())
    assert all(metrics > 0 and samples == 2 for *_, metrics, samples in held.values())
    assert [run for unit, run, *_ in held.values() if unit == computing[0]] == [computed_by_run]


def latest_run(store, label: str) -> str:
    return sqlite3.connect(store).execute("SELECT id FROM runs WHERE label = ? ORDER BY started DESC, rowid DESC "
                                          "LIMIT 1", (label,)).fetchone()[0]


@pytest.mark.parametrize("computer,first,second", [(c, f, s) for c in LABELS for f, s in itertools.permutations(LABELS, 2)])
def test_a_forced_rerun_under_any_label_leaves_every_label_its_cell(tokenizer_dir, tmp_path, computer, first, second):
    store = tmp_path / "s.db"

    def run(label: str, force: bool = False) -> None:
        assert run_suite(request(store, tasks="1", samples=2, label=label, force=force), oracle_loader(tokenizer_dir),
                         out=lambda *_: None) == 0

    run(computer)
    for label in LABELS:
        if label != computer:
            run(label)  # reuses the computer's result
    check(store, set(LABELS), latest_run(store, computer))
    run(first, force=True)
    check(store, set(LABELS), latest_run(store, first))
    run(second, force=True)
    check(store, set(LABELS), latest_run(store, second))
