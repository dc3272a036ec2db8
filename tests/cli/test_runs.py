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
    assert lines[0].split() == ["id", "label", "started", "status", "units"]
    assert [line.split()[0] for line in lines[1:]] == ids
    assert [line.split()[1] for line in lines[1:]] == ["first", "second"]
    assert [line.split()[-1] for line in lines[1:]] == ["1/1", "2/2"]
