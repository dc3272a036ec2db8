"""RULER QA sources in the layouts users have (suites/ruler/qa_layouts.py): the documented rows, SQuAD's and
HotpotQA's official JSON files as RULER itself reads them (tests/fixtures/ruler/qa/*.json), Hugging Face's exports
(``Dataset.to_json``), gzip; each read to the same rows, with text that holds U+2028, U+0085, control characters, RTL
text and a 5 MB line kept whole. What none of them is, a source with no answerable question and a length where
RULER's ten documents do not fit are refused in one line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ccq_eval.byte_tokenizer import byte_tokenizer
from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.errors import BadInput
from ccq_eval.suites.ruler import data, qa_data
from ccq_eval.suites.sniah.sizing import SniahError

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "ruler" / "qa"
HOSTILE = "a\u2028b c\u2029d e\u0085f g\x0bh\x1ci \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"


def documented(name: str) -> list[dict]:
    return [json.loads(line) for line in (Path(SHIPPED_RECORDS) / "ruler" / f"{name}.jsonl").read_text().splitlines()]


def official(name: str):
    return json.loads((FIXTURES / f"{name}.json").read_text())


def written(tmp_path: Path, name: str, rows, suffix: str = ".jsonl") -> str:
    folder = tmp_path / "data" / "ruler"
    folder.mkdir(parents=True, exist_ok=True)
    if suffix.startswith(".jsonl"):
        text = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    else:
        text = json.dumps(rows, ensure_ascii=False, indent=1)
    path = folder / f"{name}{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    return str(tmp_path / "data")


def rows_read(task: str, data_dir: str) -> tuple:
    return qa_data.load_source(task, data_dir).rows


def squad_layouts(rows: list[dict]) -> dict[str, list[dict]]:
    """The documented rows in SQuAD's own answer objects and in Hugging Face's export."""
    own = [{**r, "answers": [{"text": t, "answer_start": 0} for t in r["answers"]]} for r in rows]
    hub = [{"id": str(i), **r, "answers": {"text": r["answers"], "answer_start": [0] * len(r["answers"])}}
           for i, r in enumerate(rows)]
    return {"squad answers": own, "hugging face export": hub}


def test_squad_in_every_layout_reads_as_the_documented_rows(tmp_path):
    rows = documented("squad")
    expected = rows_read("ruler_qa_squad", written(tmp_path / "plain", "squad", rows))
    for layout, records in squad_layouts(rows).items():
        assert rows_read("ruler_qa_squad", written(tmp_path / layout, "squad", records)) == expected, layout
    assert rows_read("ruler_qa_squad", written(tmp_path / "array", "squad", rows, ".json")) == expected
    assert rows_read("ruler_qa_squad", written(tmp_path / "gz", "squad", rows, ".jsonl.gz")) == expected
    # SQuAD's official dev-v2.0.json as RULER reads it: every question, the impossible ones without answers
    document = official("squad")
    from_official = rows_read("ruler_qa_squad", written(tmp_path / "official", "squad", document, ".json"))
    questions = [q for article in document["data"] for p in article["paragraphs"] for q in p["qas"]]
    assert [r["question"] for r in from_official] == [q["question"] for q in questions]
    assert [r["answers"] for r in from_official] == [[] if q["is_impossible"] else [a["text"] for a in q["answers"]]
                                                     for q in questions]


def test_hotpotqa_official_file_and_hugging_face_export_read_as_the_documented_rows(tmp_path):
    rows = documented("hotpotqa")
    expected = rows_read("ruler_qa_hotpot", written(tmp_path / "plain", "hotpotqa", rows))
    hub = [{"id": str(i), **r, "context": {"title": [t for t, _ in r["context"]],
                                           "sentences": [s for _, s in r["context"]]}} for i, r in enumerate(rows)]
    assert rows_read("ruler_qa_hotpot", written(tmp_path / "hub", "hotpotqa", hub)) == expected
    document = official("hotpotqa")  # hotpot_dev_distractor_v1.json: an array of these rows, with more fields
    from_official = rows_read("ruler_qa_hotpot", written(tmp_path / "official", "hotpotqa", document, ".json"))
    assert [(r["question"], r["answer"], r["context"]) for r in from_official] == [
        (d["question"], d["answer"], d["context"]) for d in document]


def test_hostile_text_and_a_5_mb_line_are_kept_whole(tmp_path):
    rows = documented("squad")
    rows[0] = {**rows[0], "question": rows[0]["question"] + HOSTILE}
    rows[1] = {**rows[1], "context": rows[1]["context"] + " " + "y" * 5_000_000}
    for layout, records in {"plain": rows, **squad_layouts(rows)}.items():
        got = rows_read("ruler_qa_squad", written(tmp_path / layout, "squad", records))
        assert got[0]["question"].endswith(HOSTILE) and len(got[1]["context"]) > 5_000_000, layout
        assert len(got) == len(rows)


@pytest.mark.parametrize("name, record, said", [
    ("squad", {"title": "t", "context": "c", "question": "q", "answers": [{"start": 3}]}, "'answers' is in none"),
    ("squad", {"title": "t", "context": "c", "question": 7, "answers": []}, "'question' must be a string"),
    ("hotpotqa", {"question": "q", "answer": "a", "context": [["title only"]]}, "'context' must be a list of"),
    ("hotpotqa", {"question": "q", "answer": "a", "context": [{"title": "t"}]}, "'context' must be a list of"),
    ("hotpotqa", {"question": "q", "answer": "a", "context": {"title": ["t"], "sentences": []}},
     "'title' and 'sentences' lists of one length"),
    ("squad", {"title": "t", "context": "c", "question": "q", "answers": ["Paris", ""]}, "an empty answer beside"),
    ("squad", {"title": "t", "context": "c", "question": "q", "answers": {"text": ["Paris", " "], "answer_start": [0, 0]}},
     "an empty answer beside"),
    ("hotpotqa", {"question": "q", "answer": " ", "context": [["t", ["s"]]]}, "'answer' is empty"),
])
def test_a_record_in_no_layout_is_refused_in_one_line(tmp_path, name, record, said):
    task = "ruler_qa_squad" if name == "squad" else "ruler_qa_hotpot"
    with pytest.raises(BadInput) as refused:
        qa_data.load_source(task, written(tmp_path, name, [record]))
    message = str(refused.value)
    assert said in message and "line 1" in message and "expected" in message and "\n" not in message


def test_a_source_with_no_answerable_question_is_refused(tmp_path):
    rows = [{**row, "answers": []} for row in documented("squad")]
    with pytest.raises(qa_data.QaDataError, match="no question has an answer"):
        qa_data.load_source("ruler_qa_squad", written(tmp_path, "squad", rows))


@pytest.mark.parametrize("task", ["ruler_qa_squad", "ruler_qa_hotpot"])
def test_a_length_where_rulers_ten_documents_do_not_fit_is_refused_naming_the_smallest(task):
    """RULER's QA search starts at ten documents and its per-sample loop never ends below them."""
    sources = qa_data.sources([task], str(SHIPPED_RECORDS))
    tok = byte_tokenizer()
    smallest = data.smallest_length(task, tok, sources, 1024, 2, seed=0)
    assert smallest > 1024
    with pytest.raises(SniahError, match=f"length 1024: the {task} prompt alone needs"):
        data.generate(task, tok, 1024, 2, seed=0, haystack=sources)
    records = data.generate(task, tok, smallest, 2, seed=0, haystack=sources)
    assert min(r["haystack_units"] for r in records) >= 10


def test_the_command_names_the_smallest_length_and_writes_nothing(tmp_path, capsys):
    from ccq_eval.cli import main

    store = tmp_path / "ccq.db"
    code = main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_qa_squad", "--lengths", "1k",
                 "--samples", "2", "--data-dir", str(SHIPPED_RECORDS), "--store", str(store)])
    err = capsys.readouterr().err.strip().splitlines()
    smallest = data.smallest_length("ruler_qa_squad", byte_tokenizer(),
                                    qa_data.sources(["ruler_qa_squad"], str(SHIPPED_RECORDS)), 1024, 2, seed=0)
    assert code == 2 and len(err) == 1 and not store.exists()
    assert f"({smallest} tokens at least, with RULER's least 10 documents)" in err[0]


def test_squad_2s_unanswerable_rows_are_dropped_as_rulers_read_drops_them(tmp_path):
    """A flattened SQuAD 2.0 writes an unanswerable question's answer as "" (or as no answer): such a question is
    dropped, as RULER drops SQuAD's impossible ones, so no empty answer reaches the scorer (where it would be found in
    every prediction, an empty one included)."""
    from ccq_eval.suites.ruler.qa import string_match_part

    rows = documented("squad")
    unanswerable = [{**rows[0], "question": "Who is not named here?", "answers": [""]},
                    {**rows[1], "question": "Which year is not said?", "answers": {"text": [""], "answer_start": [-1]}},
                    {**rows[2], "question": "What is nowhere?", "answers": [{"text": "", "answer_start": -1}]}]
    source = qa_data.load_source("ruler_qa_squad", written(tmp_path, "squad", rows + unanswerable))
    asked = {question.query for question in source.qa_set.questions}
    assert asked == {r["question"] for r in rows if r["answers"]} and not asked & {r["question"] for r in unanswerable}
    assert all(all(a.strip() for a in question.outputs) for question in source.qa_set.questions)
    assert string_match_part("", [""]) == 0.0 and string_match_part("anything", ["", "thing"]) == 1.0
