"""The readers (tables, figures, the report) check what they read from a store as ingest checks what it merges: a
value stored as text or infinity, a count that is not a number, a task this version does not know, samples without
the fields a figure reads (lm-eval's, ingested) are shown as such or left out and named, never a traceback."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from ccq_eval.cli import main

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1" / "store.db"


def unit_of(db, label: str, task: str) -> str:
    return db.execute("SELECT u.id FROM units u JOIN runs r ON r.id = u.run_id WHERE r.label = ? AND u.task = ?",
                      (label, task)).fetchone()[0]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory) -> Path:
    """The fixture store with one fault of each kind on a different unit."""
    store = tmp_path_factory.mktemp("damaged") / "store.db"
    shutil.copy(FIXTURE, store)
    db = sqlite3.connect(store)
    text_nan = unit_of(db, "gla-tiny", "sniah_1")
    infinite = unit_of(db, "gla-tiny+ccq0.3", "sniah_1")
    db.execute("UPDATE metrics SET value = 'NaN' WHERE unit_id = ? AND is_primary = 1", (text_nan,))
    db.execute("UPDATE metrics SET value = 9e999 WHERE unit_id = ?", (infinite,))  # its 4 metrics: 5 in all
    db.execute("UPDATE metrics SET n = 'many', stderr = 'x' WHERE suite = 'longppl'")
    unknown = unit_of(db, "gla-tiny", "sniah_2")
    db.execute("UPDATE units SET task = 'sniah_9' WHERE id = ?", (unknown,))
    db.execute("UPDATE metrics SET task = 'sniah_9' WHERE unit_id = ?", (unknown,))
    db.execute("UPDATE samples SET fields = '{}' WHERE unit_id = ?", (text_nan,))  # as lm-eval's logged samples
    db.execute("UPDATE samples SET fields = '[1]', score = 'high' WHERE unit_id = ?", (infinite,))
    db.execute("UPDATE samples SET fields = 'not json' WHERE unit_id IN (SELECT id FROM units WHERE suite = 'longppl')")
    db.commit()
    db.close()
    return store


def note_line(err: str) -> str:
    (note,) = [line for line in err.splitlines() if line.startswith("ccq-eval: note: ")]
    return note


def test_tables_show_what_they_can_and_name_the_values_they_leave_out(damaged, tmp_path, capsys):
    assert main(["tables", "--table", "all", "--ci", "--store", str(damaged), "--out", str(tmp_path), "--format",
                 "md"]) == 0
    out, err = capsys.readouterr()
    note = note_line(err)
    assert note.startswith("ccq-eval: note: 5 stored value(s) are not finite numbers") and "= NaN" in note
    sniah = (tmp_path / "sniah.md").read_text()
    assert "sniah\\_9 (ccq-essays) 1K" in sniah  # a task this version does not know, shown by its id
    assert "inf" not in sniah.lower() and "nan" not in sniah.lower()
    assert "Traceback" not in err


def test_an_infinite_value_is_never_the_bold_best():
    import pandas as pd

    from ccq_eval.report.formats import best_mask

    values = pd.DataFrame({"S1 1K": [float("inf"), 40.0, 20.0]}, index=["a", "b", "c"])
    assert best_mask(values).to_dict()["S1 1K"] == {"a": False, "b": True, "c": False}
    assert best_mask(values, higher_is_better=False).to_dict()["S1 1K"] == {"a": False, "b": False, "c": True}


def test_a_column_where_every_row_ties_has_no_bold_best_and_a_partial_tie_bolds_the_tied():
    import pandas as pd

    from ccq_eval.report.formats import best_mask

    values = pd.DataFrame({"all 0": [0.0, 0.0, 0.0], "two tie": [50.0, 50.0, 10.0], "one row": [None, 5.0, None]},
                          index=["a", "b", "c"])
    mask = best_mask(values).to_dict()
    assert mask["all 0"] == {"a": False, "b": False, "c": False}
    assert mask["two tie"] == {"a": True, "b": True, "c": False}
    assert mask["one row"] == {"a": False, "b": True, "c": False}


def test_intervals_of_counts_that_are_not_counts_are_missing_not_errors():
    import math

    from ccq_eval.report.intervals import exp_t_interval, wilson_interval

    for successes, n in ((math.inf, 10), (5, math.nan), (5, math.inf), (12, 10), (-1, 10), (1, 0)):
        assert all(math.isnan(b) for b in wilson_interval(successes, n)), (successes, n)
    assert all(math.isnan(b) for b in exp_t_interval(math.inf, 0.1, 10))
    low, high = wilson_interval(5, 10)
    assert 0 < low < 50 < high < 100


def test_figures_draw_what_they_can_from_a_damaged_store(damaged, tmp_path, capsys):
    assert main(["curves", "--store", str(damaged), "--out", str(tmp_path)]) == 0
    assert "Traceback" not in capsys.readouterr().err
    assert (tmp_path / "longppl.png").is_file()


def test_the_report_is_written_from_a_damaged_store(damaged, tmp_path, capsys):
    out = tmp_path / "report.html"
    assert main(["view", "--store", str(damaged), "--out", str(out)]) == 0
    assert "ccq-eval: note: 5 stored value(s)" in capsys.readouterr().err
    assert "sniah_9" in out.read_text()


def test_a_very_long_label_keeps_the_recall_state_figure_readable(tmp_path):
    import warnings

    from ccq_eval.report.figures import PLOT_LABEL_CHARS, plot_label
    from ccq_eval.catalogue import draw_figure
    from ccq_eval.store import Store

    store = tmp_path / "long.db"
    shutil.copy(FIXTURE, store)
    label = "m" * 10_000
    db = sqlite3.connect(store)
    db.execute("UPDATE runs SET label = ? WHERE label = 'gla-tiny'", (label,))
    db.execute("UPDATE metrics SET label = ? WHERE label = 'gla-tiny'", (label,))
    db.commit()
    shown = plot_label(label)
    assert len(shown) == PLOT_LABEL_CHARS and "…" in shown
    assert plot_label("a" * 50 + "one") != plot_label("a" * 50 + "two")  # the ends stay apart
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # matplotlib's "axes sizes collapsed to zero" among them
        figure = draw_figure(Store(store, readonly=True), "recall-state")
        figure.savefig(tmp_path / "recall.png")
    (axes, *_) = figure.axes
    assert axes.get_position().width * figure.get_figwidth() > 3  # inches of plot, not a sliver
