"""Recall records in the layouts users have: JSON Lines with web text that holds U+2028, U+0085, control characters and
RTL text (as TriviaQA's pages do) and a 5 MB document; a JSON array (Hugging Face's ``Dataset.to_json(lines=False)``,
pandas' ``to_json(orient="records")``); gzip. Each read to the same records; an ``alt_answers`` that is not a list of
strings, and an empty answer anywhere, are refused in one line before any model loads."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.recall import data
from ccq_eval.suites.recall.tasks import TASKS

HOSTILE = " a\u2028b c\u2029d e\u0085f g\x0bh\x1ci \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"


def shipped(key: str) -> list[dict]:
    return [json.loads(line) for line in (Path(SHIPPED_RECORDS) / "recall" / f"{key}.jsonl").read_text().splitlines()]


def written(root: Path, key: str, records: list[dict], suffix: str) -> str:
    folder = root / "recall"
    folder.mkdir(parents=True)
    if suffix.startswith(".jsonl"):
        text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    else:
        text = json.dumps(records, ensure_ascii=False)
    (folder / f"{key}{suffix}").write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    return str(root)


@pytest.mark.parametrize("task", ["recall_triviaqa", "recall_swde"])
def test_every_layout_reads_the_same_records_with_hostile_text_kept(task, tmp_path):
    spec = TASKS[task]
    records = shipped(spec.key)
    records[0] = {**records[0], spec.fields[0]: records[0][spec.fields[0]] + HOSTILE}
    records[1] = {**records[1], spec.fields[0]: records[1][spec.fields[0]] + " " + "z" * 5_000_000}
    read = {suffix: data.read_records(task, written(tmp_path / suffix.strip("."), spec.key, records, suffix))
            for suffix in (".jsonl", ".json", ".jsonl.gz", ".json.gz")}
    first = read[".jsonl"]
    assert len(first) == len(records) and first[0][spec.fields[0]].endswith(HOSTILE)
    assert len(first[1][spec.fields[0]]) > 5_000_000
    assert all(got == first for got in read.values())


@pytest.mark.parametrize("alternatives", [[["Paris"], ["Lyon"]], "Paris", [1, 2]])
def test_alternative_answers_that_are_not_strings_are_refused_in_one_line(alternatives, tmp_path):
    records = shipped("triviaqa")
    records[2] = {**records[2], "alt_answers": alternatives}
    with pytest.raises(data.RecallDataError) as refused:
        data.read_records("recall_triviaqa", written(tmp_path, "triviaqa", records, ".jsonl"))
    assert "line 3: 'alt_answers' must be a list of non-empty strings" in str(refused.value)
    assert "\n" not in str(refused.value)


@pytest.mark.parametrize("task,field,empty", [("recall_triviaqa", "answers", ["", "Paris"]),
                                               ("recall_triviaqa", "answers", [" "]),
                                               ("recall_triviaqa", "alt_answers", [""]),
                                               ("recall_swde", "value", "")])
def test_an_empty_answer_is_refused_in_one_line_and_never_scores(task, field, empty, tmp_path):
    """An empty answer is found in every prediction (an empty one included): refused, naming the file and line,
    before any model loads; and the scorer never counts one."""
    from ccq_eval.suites.recall.scoring import contains

    key = TASKS[task].key
    records = shipped(key)
    records[1] = {**records[1], field: empty}
    with pytest.raises(data.RecallDataError) as refused:
        data.read_records(task, written(tmp_path, key, records, ".jsonl"))
    message = str(refused.value)
    assert f"{key}.jsonl" in message and f"line 2: '{field}' must be" in message and "\n" not in message
    assert contains("", [""]) == 0.0 and contains("no answer here", [" ", "answer"]) == 100.0


@pytest.mark.parametrize("position", ["12", 12.5, True, -3])
def test_a_token_position_that_is_not_a_whole_number_is_refused_before_the_model_loads(position, tmp_path):
    """NQ's tok_pos is where the window centres when the document lacks the answer: checked with the record, not
    met as a TypeError after the model has loaded."""
    records = shipped("nq")
    records[0] = {**records[0], "tok_pos": position}
    with pytest.raises(data.RecallDataError) as refused:
        data.read_records("recall_nq", written(tmp_path, "nq", records, ".jsonl"))
    assert "line 1: 'tok_pos' must be a whole number of tokens" in str(refused.value)
    records[0] = {**records[0], "tok_pos": 12}
    assert data.read_records("recall_nq", written(tmp_path / "ok", "nq", records, ".jsonl"))[0]["tok_pos"] == 12


def test_a_fetched_parquet_with_gaps_in_tok_pos_reads_whole_numbers_and_no_gaps(tmp_path):
    """pandas reads an integer column with a gap as floats: the fetched records hold 12, not 12.0, and no NaN."""
    import pandas as pd

    rows = shipped("nq")[:2]
    frame = pd.DataFrame([{**rows[0], "tok_pos": 12}, {**rows[1], "tok_pos": None}])
    assert frame["tok_pos"].dtype == "float64"  # what the reader meets
    frame.to_parquet(tmp_path / "nq.parquet")
    records = data.parquet_records(tmp_path / "nq.parquet")
    assert records[0]["tok_pos"] == 12 and type(records[0]["tok_pos"]) is int and "tok_pos" not in records[1]
    assert data.check_records("recall_nq", enumerate(records, 1), "nq") == records
