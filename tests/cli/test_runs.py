"""`ccq-eval runs`: each run of the store with its unit counts, read through the store's named reads."""

from __future__ import annotations

from ccq_eval.cli import main


def test_runs_lists_each_run_with_its_unit_counts(tokenizer_dir, tmp_path, capsys):
    from ccq_eval.run import RunRequest, run_suite
    from ccq_eval.store import Store
    from tests.oracle import oracle_loader

    store = tmp_path / "s.db"
    for label, tasks in (("first", "1"), ("second", "2,3")):
        request = RunRequest(model="oracle", suite="sniah", tasks=tasks, lengths="1k", samples=2, store=str(store),
                             label=label)
        assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 0
    lines = capsys.readouterr().out.splitlines()
    ids = [r.id for r in Store(store, readonly=True).reads.runs()]
    assert lines[0].split() == ["id", "label", "started", "status", "shard", "units"]
    assert [line.split()[0] for line in lines[1:]] == ids
    assert [line.split()[1] for line in lines[1:]] == ["first", "second"]
    assert [line.split()[-1] for line in lines[1:]] == ["1/1", "2/2"]


def test_the_columns_are_apart_whatever_the_timestamp(tokenizer_dir, tmp_path, capsys):
    """A timestamp with microseconds and an offset (ingested from elsewhere) never runs into the status."""
    import sqlite3

    from ccq_eval.run import RunRequest, run_suite
    from tests.oracle import oracle_loader

    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=1, store=str(store), label="x")
    assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    db.execute("UPDATE runs SET started = '2026-12-07T16:21:15.123456789+05:30'")
    db.commit()
    capsys.readouterr()
    assert main(["runs", "--store", str(store)]) == 0
    row = capsys.readouterr().out.splitlines()[1].split()
    assert row[2:] == ["2026-12-07T16:21:15.123456789+05:30", "complete", "-", "1/1"]


def test_a_store_edited_by_hand_is_read_without_its_orphans_and_checked(tokenizer_dir, tmp_path, capsys):
    """`DELETE FROM runs` in the sqlite3 shell (foreign keys off) leaves the run's units, metrics and samples behind:
    every reader leaves them out with one line saying how many, never a KeyError; `runs --check` lists them."""
    import sqlite3

    from ccq_eval.run import RunRequest, run_suite
    from tests.oracle import oracle_loader

    store = tmp_path / "s.db"
    for label in ("kept", "gone"):
        request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, store=str(store),
                             label=label, force=True)
        assert run_suite(request, oracle_loader(tokenizer_dir), out=lambda *_: None) == 0
    assert main(["runs", "--check", "--store", str(store)]) == 0
    db = sqlite3.connect(store)  # the shell's default: foreign keys off
    gone = db.execute("SELECT id FROM runs WHERE label = 'gone'").fetchone()[0]
    db.execute("DELETE FROM runs WHERE label = 'gone'")
    db.commit()
    before = store.read_bytes()
    capsys.readouterr()
    note = "1 unit(s), 3 metric row(s) and 2 sample(s) belong to no run"
    for command in (["tables", "--table", "sniah", "--out", str(tmp_path / "t")], ["view", "--out", str(tmp_path / "r.html")],
                    ["curves", "--out", str(tmp_path / "f")], ["runs"]):
        assert main([*command, "--store", str(store)]) == 0, command
        out, err = capsys.readouterr()
        assert "gone" not in out and "Traceback" not in err, command
        if command[0] != "runs":
            assert err.count(note) == 1, (command, err)
    assert "kept" in (tmp_path / "t" / "sniah.csv").read_text() and "gone" not in (tmp_path / "t" / "sniah.csv").read_text()
    assert store.read_bytes() == before  # reading changed nothing
    assert main(["rescore", "--store", str(store)]) == 0
    assert capsys.readouterr().err.count(note) == 1
    assert main(["runs", "--check", "--store", str(store)]) == 1
    out = capsys.readouterr().out
    assert note in out and f"its run {gone} is gone" in out
