"""BABILong at length 0 (the reference's 0k): the statements alone, no haystack. qa6-qa20 run there only, from a
user's bAbI files (tests/fixtures/babilong/babi: small stories in bAbI's format) or the published 0k split; qa1-qa5 run
there too, and the table's QA1-QA5 mean never takes qa6-qa20 in. A length other than 0 for qa6-qa20, their stories not
at hand, and 0 for a suite without such a length are one line each."""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest

from ccq_eval.cli import main
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites.babilong.babi import read_babi
from ccq_eval.suites.babilong.data import TASK_FILES
from ccq_eval.suites.base import SuiteError, parse_lengths
from tests.oracle import answers_loader

CRAFTED = Path(__file__).resolve().parents[2] / "fixtures" / "babilong" / "babi"
QUESTION = re.compile(r"Question: (.*)$")


def crafted_answers() -> dict[str, str]:
    """question -> answer over every crafted story (each question is asked once across the files)."""
    return {s.question.strip(): s.answer for path in CRAFTED.glob("*.txt") for s in read_babi(path.read_text(), path.name)}


def data_dir(tmp_path) -> str:
    shutil.copytree(CRAFTED, tmp_path / "data" / "babilong")
    return str(tmp_path / "data")


def test_qa6_to_qa20_run_on_their_statements_alone_and_score_as_the_reference(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    answers = crafted_answers()
    store = tmp_path / "s.db"
    tasks = ",".join(f"qa{n}" for n in range(6, 21))
    request = RunRequest(model="oracle", suite="babilong", tasks=tasks, lengths="0", samples=None, store=str(store),
                         data_dir=data_dir(tmp_path))
    oracle = answers_loader("oracle", lambda prompt: f" {answers[QUESTION.search(prompt).group(1).strip()]}.")
    assert run_suite(request, oracle, out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    scores = dict(db.execute("SELECT u.task, m.value FROM metrics m JOIN units u ON u.id = m.unit_id "
                             "WHERE m.metric = 'score' AND u.context_length = 0"))
    # the right answer scores, qa7's "none" aside: compare_answers finds "one" in it too, as the reference does
    assert scores.pop("babilong_qa7") == pytest.approx(200 / 3) and set(scores.values()) == {100.0}
    assert len(scores) == 14
    for task, settings in db.execute("SELECT task, settings FROM units"):
        settings = json.loads(settings)  # no haystack named; the user's file of the task named
        assert "haystack" not in settings and settings["source"] == "generated at the model's lengths"
        assert Path(settings["stories"]["source"]).name == TASK_FILES[task.removeprefix("babilong_")]
    records = [json.loads(line) for path in (tmp_path / "cache" / "babilong").glob("*.jsonl")
               for line in path.read_text().splitlines()[1:]]
    assert records and all(r["context_tokens"] == sum(len(" " + f) for f in r["facts"]) for r in records)
    for r in records:  # the context is the statements, in order, nothing between them
        assert r["prompt"].rsplit("<context>\n", 1)[1].split("\n</context>")[0] == " ".join(r["facts"])
    from ccq_eval.catalogue import table_frame
    from ccq_eval.store import Store

    columns = list(table_frame(Store(store, readonly=True), "babilong").columns)
    assert columns == [f"QA{n} 0K" for n in range(6, 21)]  # no haystack named, no QA1-QA5 mean


def test_the_mean_is_over_qa1_to_qa5_only_at_0k(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    store = tmp_path / "s.db"
    tasks = "qa1,qa2,qa3,qa4,qa5,qa6"
    request = RunRequest(model="yes", suite="babilong", tasks=tasks, lengths="0", samples=2, store=str(store),
                         data_dir=data_dir(tmp_path))
    assert run_suite(request, answers_loader("yes", lambda prompt: " yes."), out=lambda *_: None) == 0
    from ccq_eval.catalogue import table_frame
    from ccq_eval.store import Store

    frame = table_frame(Store(store, readonly=True), "babilong")
    assert frame.loc[:, "QA6 0K"].iloc[0] > 0 and frame.loc[:, "Avg 0K"].iloc[0] == 0.0  # qa6's yes not averaged in
    from ccq_eval.catalogue import draw_figure

    assert draw_figure(Store(store, readonly=True), "babilong") is None  # 0K has no length axis: the table has it


def test_the_published_0k_split_serves_qa6_to_qa20(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "data" / "babilong-published" / "0k"
    folder.mkdir(parents=True)
    (folder / "qa17.jsonl").write_text(json.dumps({"input": "The triangle is above the pink rectangle.",
                                                   "question": "Is the pink rectangle above the triangle?",
                                                   "target": "no"}) + "\n")
    store = tmp_path / "s.db"
    request = RunRequest(model="no", suite="babilong", tasks="qa17", lengths="0", samples=None, store=str(store),
                         data_dir=str(tmp_path / "data"), options={"babilong-source": "published"})
    assert run_suite(request, answers_loader("no", lambda prompt: " no."), out=lambda *_: None) == 0
    db = sqlite3.connect(store)
    assert [v for (v,) in db.execute("SELECT value FROM metrics WHERE metric = 'score'")] == [100.0]
    assert json.loads(db.execute("SELECT settings FROM units").fetchone()[0])["source"] == "published split 0k"


@pytest.mark.parametrize("argv,crafted,said", [
    (["--tasks", "qa6", "--lengths", "0,1k"], True, "--tasks qa6: qa6-qa20 run at --lengths 0 only"),
    (["--tasks", "qa1,qa9", "--lengths", "2k"], True, "--tasks qa9: qa6-qa20 run at --lengths 0 only"),
    (["--tasks", "qa12", "--lengths", "0"], False, "--tasks qa12: its bAbI stories do not ship with ccq-eval; put "
                                                   "bAbI's qa12_conjunction_test.txt"),
    (["--suite", "sniah", "--lengths", "0"], True, "--lengths '0': '0' is not a length"),
])
def test_refused_lengths_and_missing_stories_are_one_line(tmp_path, monkeypatch, capsys, argv, crafted, said):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    given = data_dir(tmp_path) if crafted else str(tmp_path)
    store = tmp_path / "s.db"
    code = main(["--model", "zoo:gla-tiny", "--suite", "babilong", *argv, "--data-dir", given, "--store", str(store),
                 "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and said in err and "\n" not in err and not store.exists(), err


def test_zero_is_a_length_only_where_a_suite_gives_it_a_meaning():
    assert parse_lengths("0,1k", zero=True) == (0, 1024)
    with pytest.raises(SuiteError, match="'0' is not a length"):
        parse_lengths("0,1k")
