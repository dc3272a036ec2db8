"""`--suite babilong` end to end: a solver that reasons from the prompt's statements scores 100 and a wrong one 0,
every sample stored with its question and where its statements sit; a real zoo model runs offline from the shipped
stories, and the table and the report render its cells; a length that cannot hold the statements and a malformed
bAbI file are one line each, exit 2, nothing written."""

from __future__ import annotations

import json
import re
import sqlite3

import pytest

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from tests.oracle import answers_loader

MOVE = re.compile(r"(\w+) (?:travelled|journeyed|went back|went|moved) to the (\w+)\.")


def where_is(prompt: str) -> str:
    """qa1's answer in the reference's format: the asked person's latest location among the statements."""
    person = re.search(r"Question: Where is (\w+)\?$", prompt).group(1)
    context = prompt[prompt.index("<context>"):]
    return f" The most recent location of {person} is {[loc for who, loc in MOVE.findall(context) if who == person][-1]}."


@pytest.mark.parametrize("solver,expected", [(where_is, 100.0), (lambda prompt: " The kitchen garden.", None)])
def test_a_solver_scores_what_it_answers_and_every_sample_is_stored(tmp_path, monkeypatch, solver, expected):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    store = tmp_path / "s.db"
    request = RunRequest(model="solver", suite="babilong", tasks="qa1", lengths="2k,4k", samples=6, store=str(store))
    assert run_suite(request, answers_loader("solver", solver), out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    scores = [v for (v,) in db.execute("SELECT value FROM metrics WHERE metric = 'score'")]
    assert len(scores) == 2 and (set(scores) == {100.0} if expected else max(scores) < 100.0)
    rows = db.execute("SELECT s.target, s.fields, u.settings FROM samples s JOIN units u ON u.id = s.unit_id").fetchall()
    assert len(rows) == 12
    for target, fields, settings in rows:
        fields, settings = json.loads(fields), json.loads(settings)
        assert fields["question"].startswith("Where is") and fields["fact_depths"] == sorted(fields["fact_depths"])
        assert len(fields["fact_depths"]) == fields["facts"] and fields["prompt_tokens"] + 20 <= 4096
        assert settings["source"] == "generated at the model's lengths" and settings["haystack"]["name"] == "ccq-essays"
        assert settings["stories"]["source"] == "shipped" and target in ("bathroom", "bedroom", "garden", "hallway",
                                                                         "kitchen", "office")


def test_a_zoo_model_runs_offline_and_its_table_and_report_render(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "babilong", "--tasks", "qa1,qa2", "--lengths", "2k",
                 "--samples", "2", "--store", str(store), "--device", "cpu"]) == 0
    assert main(["tables", "--table", "babilong", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    table = (tmp_path / "t" / "babilong.md").read_text()
    assert "QA1 (ccq-essays) 2K" in table and "QA2 (ccq-essays) 2K" in table and "Avg" not in table  # two of five
    from ccq_eval.catalogue import draw_figure
    from ccq_eval.store import Store

    figure = draw_figure(Store(store, readonly=True), "babilong")
    shown = [ax.get_title() for ax in figure.axes if ax.get_visible() and ax.get_title()]
    assert shown == ["QA1 (ccq-essays)", "QA2 (ccq-essays)"]  # no mean panel: two of the five tasks
    assert main(["curves", "--figure", "babilong", "--store", str(store), "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "babilong.png").stat().st_size > 10_000
    assert main(["view", "--store", str(store), "--out", str(tmp_path / "r.html")]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "babilong_qa1" in html and "supporting fact" in html


@pytest.mark.parametrize("setup,argv,said", [
    (None, ["--lengths", "512"], "--lengths 512: every babilong_qa1 prompt with its statements and the 20 tokens to "
                                 "generate needs"),
    ("1 Mary went home.\nMary left.\n", [], "line 2 is not '<number> <text>'"),
])
def test_refused_inputs_are_one_line_and_write_nothing(tmp_path, monkeypatch, capsys, setup, argv, said):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    if setup is not None:
        (tmp_path / "data" / "babilong").mkdir(parents=True)
        (tmp_path / "data" / "babilong" / "qa1_single-supporting-fact_test.txt").write_text(setup)
    store = tmp_path / "s.db"
    code = main(["--model", "zoo:gla-tiny", "--suite", "babilong", "--tasks", "qa1", "--data-dir", str(tmp_path / "data"),
                 "--store", str(store), "--device", "cpu", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err and not store.exists()
    assert not (tmp_path / "cache" / "babilong").exists()


def test_the_mean_panel_averages_only_a_full_set_of_the_five_tasks():
    import pandas as pd

    from ccq_eval.suites.babilong import TASKS
    from ccq_eval.suites.babilong.figures import MEAN, panels

    rows = pd.DataFrame([{"label": "a", "task": t, "context_length": 4096, "value": 10.0 * i, "haystack": "pg19"}
                         for i, t in enumerate(TASKS)] +
                        [{"label": "a", "task": TASKS[0], "context_length": 8192, "value": 50.0, "haystack": "pg19"},
                         {"label": "b", "task": TASKS[0], "context_length": 4096, "value": 70.0, "haystack": "essays"}])
    found = {(title, haystack): sub for title, haystack, sub in panels(rows, TASKS)}
    mean = found[(MEAN, "pg19")]
    assert mean[["label", "context_length", "value"]].values.tolist() == [["a", 4096, 20.0]]  # 8K has one task only
    assert (MEAN, "essays") not in found and (TASKS[0], "essays") in found


def published_split(root, split: str, rows: list[dict]) -> str:
    folder = root / "data" / "babilong-published" / split
    folder.mkdir(parents=True)
    (folder / "qa1.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(root / "data")


SPLIT_ROWS = [{"input": "The sea was calm. John travelled to the hallway. Mary went to the garden. It rained.",
               "question": "Where is John?", "target": "hallway"},
              {"input": "Sandra moved to the office. A long day passed. Sandra went to the kitchen.",
               "question": "Where is Sandra?", "target": "kitchen"}]


def test_a_published_split_is_read_as_it_is_and_says_so(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    data_dir = published_split(tmp_path, "4k", SPLIT_ROWS)
    store = tmp_path / "s.db"
    request = RunRequest(model="solver", suite="babilong", tasks="qa1", lengths="4k", samples=None, store=str(store),
                         data_dir=data_dir, options={"babilong-source": "published"})
    assert run_suite(request, answers_loader("solver", where_is), out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    assert [v for (v,) in db.execute("SELECT value FROM metrics WHERE metric = 'score'")] == [100.0]
    settings = json.loads(db.execute("SELECT settings FROM units").fetchone()[0])
    assert settings["source"] == "published split 4k" and settings["split"]["name"] == "4k"
    from ccq_eval.catalogue import table_frame
    from ccq_eval.store import Store

    assert list(table_frame(Store(store, readonly=True), "babilong").columns) == ["QA1 (published 4k) 4K"]


@pytest.mark.parametrize("rows,lengths,said", [
    (None, "4k", "BABILong's published split not found offline: 4k/qa1"),
    ([{"input": "x", "question": "Where is John?", "target": " "}], "4k", "line 1: 'target' is empty"),
    ([{"input": "x", "question": 3, "target": "hallway"}], "4k", "line 1: needs string fields input, question, target"),
    (SPLIT_ROWS, "3000", "--lengths 3000: BABILong's published splits are 0k, 1k"),
])
def test_a_published_split_that_cannot_be_read_is_one_line(tmp_path, monkeypatch, capsys, rows, lengths, said):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    data_dir = published_split(tmp_path, "4k", rows) if rows is not None else str(tmp_path)
    store = tmp_path / "s.db"
    code = main(["--model", "zoo:gla-tiny", "--suite", "babilong", "--tasks", "qa1", "--lengths", lengths,
                 "--babilong-source", "published", "--data-dir", data_dir, "--store", str(store), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err and not store.exists(), err
    if rows is None:
        assert "ccq-eval data fetch babilong" in err
