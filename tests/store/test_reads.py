"""The store's named reads, each checked against the rows a run wrote (read here with plain sqlite3): typed
rows with their JSON parsed, the filters narrowing what they say, a run's bundle, and the frames the report
builds its tables from."""

import json
import sqlite3

import pytest

from ccq_eval.run import RunRequest, run_suite
from ccq_eval.store import MetricRow, RunRow, SampleRow, Store, UnitRow
from tests.oracle import oracle_loader


@pytest.fixture(scope="module")
def store_path(tmp_path_factory, tokenizer_dir):
    folder = tmp_path_factory.mktemp("reads")
    path = folder / "s.db"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("CCQ_EVAL_CACHE", str(folder / "cache"))  # never the user's cache
        for label, tasks in (("first", "1"), ("second", "1,2")):
            request = RunRequest(model="oracle", suite="sniah", tasks=tasks, lengths="1k", samples=3,
                                 store=str(path), label=label, seed=0 if label == "first" else 1)
            assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    return path


def raw(path, sql, params=()):
    db = sqlite3.connect(path)
    db.row_factory = sqlite3.Row
    return [dict(r) for r in db.execute(sql, params)]


def test_runs_are_typed_rows_oldest_first_with_their_unit_counts(store_path):
    runs = Store(store_path, readonly=True).reads.runs()
    assert [type(r) for r in runs] == [RunRow, RunRow] and [r.label for r in runs] == ["first", "second"]
    assert [(r.units, r.complete_units) for r in runs] == [(1, 1), (2, 2)]
    stored = raw(store_path, "SELECT * FROM runs ORDER BY started, rowid")
    assert [r.id for r in runs] == [s["id"] for s in stored]
    assert runs[1].seeds == {"seed": 1} and runs[0].model_config["model_type"] == "oracle"  # JSON parsed
    assert Store(store_path, readonly=True).reads.run(runs[1].id) == runs[1]
    assert Store(store_path, readonly=True).reads.run("no-such-run") is None


def test_units_metrics_and_samples_narrow_as_asked(store_path):
    store = Store(store_path, readonly=True)
    second = store.reads.runs()[1]
    units = store.reads.units(second.id)
    assert [type(u) for u in units] == [UnitRow, UnitRow] and [u.task for u in units] == ["sniah_1", "sniah_2"]
    assert [u.id for u in units] == [r["id"] for r in raw(store_path, "SELECT id FROM units WHERE run_id = ? "
                                                                      "ORDER BY rowid", (second.id,))]
    assert store.reads.units(status="failed") == [] and len(store.reads.units(status="complete")) == 3
    assert units[0].settings["samples"] == 3
    metrics = store.reads.metrics(units[0].id)
    assert all(type(m) is MetricRow for m in metrics)
    assert {m.metric for m in metrics} == {r["metric"] for r in raw(store_path, "SELECT metric FROM metrics WHERE "
                                                                                "unit_id = ?", (units[0].id,))}
    primary = store.reads.metrics(tasks=("sniah_2",), primary_only=True)
    assert [(m.label, m.task, m.metric, m.is_primary) for m in primary] == [("second", "sniah_2", "score", True)]
    samples = store.reads.samples(units[1].id)
    assert [type(s) for s in samples] == [SampleRow] * 3 and [s.idx for s in samples] == [0, 1, 2]
    stored = raw(store_path, "SELECT fields FROM samples WHERE unit_id = ? AND idx = 0", (units[1].id,))[0]["fields"]
    assert samples[0].fields == json.loads(stored) and "depth" in samples[0].fields  # JSON parsed


def test_a_run_bundle_holds_every_complete_unit_with_its_metrics_and_samples(store_path):
    store = Store(store_path, readonly=True)
    second = store.reads.runs()[1]
    bundle = store.reads.run_bundle(second.id)
    assert bundle.run == second and [u.unit.task for u in bundle.units] == ["sniah_1", "sniah_2"]
    for part in bundle.units:
        assert part.metrics == store.reads.metrics(part.unit.id) and len(part.samples) == 3
    assert store.reads.run_bundle("no-such-run") is None


def test_labels_and_keys(store_path):
    store = Store(store_path, readonly=True)
    assert store.reads.labels() == ["first", "second"]
    keys = [u.unit_key for u in store.reads.units(store.reads.runs()[0].id)]
    assert store.reads.complete_unit_keys("first") == set(keys) and store.reads.complete_unit_keys() >= set(keys)
    assert len(store.reads.complete_unit_keys("second")) == 2
    assert store.reads.units_of_run(store.reads.runs()[0].id) == [("sniah_1", 1024, "complete")]


def test_the_report_frames_hold_every_complete_row(store_path):
    store = Store(store_path, readonly=True)
    frame = store.reads.metrics_frame()
    assert len(frame) == raw(store_path, "SELECT COUNT(*) AS n FROM metrics")[0]["n"]
    assert {"unit_id", "finished", "settings", "label", "context_length"} <= set(frame.columns)
    samples = store.reads.samples_frame("sniah", ("score", "fields"))
    assert len(samples) == 9 and {"label", "task", "score", "fields"} <= set(samples.columns)
    assert store.reads.samples_frame("longppl", ("score",)).empty


def test_a_sample_column_the_schema_lacks_is_refused_by_name(store_path):
    with pytest.raises(ValueError, match="samples have no column 'score; DROP TABLE runs'"):
        Store(store_path, readonly=True).reads.samples_frame("sniah", ("score; DROP TABLE runs",))
    assert len(Store(store_path, readonly=True).reads.runs()) == 2


def test_a_json_column_that_is_not_json_reads_as_none(tmp_path, store_path):
    copy = tmp_path / "c.db"
    db = sqlite3.connect(copy)
    sqlite3.connect(store_path).backup(db)  # a copy with the WAL's pages
    db.execute("UPDATE runs SET model_config = 'not json' WHERE label = 'first'")
    db.commit()
    first = Store(copy, readonly=True).reads.runs()[0]
    assert first.label == "first" and first.model_config is None
