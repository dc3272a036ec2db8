"""`ccq-eval --suite recall` end to end: an oracle answering each prompt with its record's answer scores 100 and
one answering a word no record holds scores 0, through lm-eval; the stored samples say how much of each document
was kept; a zoo model runs through the command line with its answers stopped at the first newline; missing records
are refused in one line before the model loads; the recall table shows the six tasks with their average (the lm
suite's SWDE, SQuAD and FDA under a marked label where this suite's are missing), and GDN's reported rows with
--reference."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites.recall import TASK_IDS
from tests.oracle import answers_loader, stored_units as stored

FIXTURES = str(SHIPPED_RECORDS)  # recall/<key>.jsonl


def answers_of_prompts(length: int, samples: int) -> dict[str, set[str]]:
    """Each prompt the suite builds on the byte tokenizer -> the answers of the records that give it (tasks share
    documents and questions)."""
    from ccq_eval.suites.recall import data
    from tests.helpers import byte_tokenizer

    answers = {}
    for task in TASK_IDS:
        for doc in data.build(task, data.read_records(task, FIXTURES), byte_tokenizer(), length, samples):
            answers.setdefault(doc["prompt"], set()).update(doc["answers"])
    return answers


def answers_loader_of(wrong: bool):
    """Answers a prompt with its record's answers, or a word none holds."""
    answers = answers_of_prompts(512, 4)

    def answer(prompt):
        return " qqqq" if wrong else " it is " + " or ".join(sorted(answers[prompt]))
    return answers_loader(f"answers-{wrong}", answer)


@pytest.mark.parametrize("wrong,expected", [(False, 100.0), (True, 0.0)])
def test_an_oracle_scores_100_and_a_wrong_one_0(tmp_path, wrong, expected):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="answers", suite="recall", lengths="512", samples=4, store=str(store), label="a",
                         data_dir=FIXTURES)
    assert run_suite(request, answers_loader_of(wrong), out=lambda *_: None) == 0
    metrics, samples = stored(store)
    assert {t: metrics[(t, 512, "contains")] for t in TASK_IDS} == {t: expected for t in TASK_IDS}
    assert len(samples) == 4 * len(TASK_IDS) == 24
    for task, settings, score, target, prediction, fields in samples:
        settings, fields = json.loads(settings), json.loads(fields)
        assert settings["max_gen_toks"] == 48 and settings["reference"].startswith("HazyResearch/prefix-linear")
        assert fields["kept_tokens"] <= 512 - 50 and fields["kept_tokens"] <= fields["document_tokens"]
        assert settings["generation_budget"] >= fields["prompt_tokens"] + 48


def test_a_zoo_model_answers_up_to_the_first_newline(tmp_path):
    from ccq_eval.cli import main

    store = tmp_path / "ccq.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "recall", "--tasks", "recall_nq", "--lengths", "256",
                 "--samples", "3", "--store", str(store), "--data-dir", FIXTURES]) == 0
    metrics, samples = stored(store)
    assert 0 <= metrics[("recall_nq", 256, "contains")] <= 100 and len(samples) == 3
    assert all("\n" not in prediction for *_, prediction, _ in samples)


def test_missing_records_are_refused_in_one_line_before_the_model_loads(tmp_path, capsys):
    from ccq_eval.cli import main

    code = main(["--model", "zoo:gla-tiny", "--suite", "recall", "--lengths", "256", "--store",
                 str(tmp_path / "ccq.db"), "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "ccq-eval data fetch recall" in err[0]
    assert all(f"{key}.jsonl" in err[0] for key in ("swde", "squad", "fda", "triviaqa", "nq", "drop"))
    assert not (tmp_path / "ccq.db").exists()


def frame(rows):
    return pd.DataFrame([{"label": label, "suite": suite, "task": task, "metric": "contains", "value": value,
                          "context_length": length} for label, suite, task, length, value in rows])


def test_the_table_shows_the_six_tasks_and_their_average_where_a_model_has_all():
    from ccq_eval.catalogue.recall import recall_cells

    values = {"recall_swde": 30.0, "recall_squad": 40.0, "recall_fda": 20.0, "recall_triviaqa": 60.0,
              "recall_nq": 20.0, "recall_drop": 10.0}
    recall = [("m", "recall", t, 2048, v) for t, v in values.items()]
    cells = recall_cells(frame(recall + [("n", "recall", "recall_nq", 2048, 5.0)]))
    assert list(cells.columns) == ["SWDE", "SQD", "FDA", "TQA", "NQ", "Drop", "Avg"]
    assert cells.loc["m"].tolist() == [30.0, 40.0, 20.0, 60.0, 20.0, 10.0, 30.0]
    assert cells.loc["n", "NQ"] == 5.0 and pd.isna(cells.loc["n", "Avg"])
    two = recall_cells(frame(recall + [("m", "recall", "recall_nq", 1024, 25.0)]))
    assert {"NQ 1K", "NQ 2K", "Avg 2K", "Avg 1K"} <= set(two.columns) and pd.isna(two.loc["m", "Avg 1K"])
    other = recall_cells(frame([(label, suite, task, 1024, v) for label, suite, task, _, v in recall]))
    assert list(other.columns) == [f"{c} 1K" for c in ("SWDE", "SQD", "FDA", "TQA", "NQ", "Drop", "Avg")]


def test_without_the_suites_own_swde_squad_fda_the_lm_suites_fill_them_under_a_marked_label():
    """lm-eval's own swde, squad_completion and fda read each document whole: a row using them says so."""
    from ccq_eval.catalogue.recall import recall_cells

    lm = [("m", "lm", t, 2048, v) for t, v in (("swde", 31.0), ("squad_completion", 41.0), ("fda", 21.0))]
    three = [("m", "recall", t, 2048, v) for t, v in (("recall_triviaqa", 60.0), ("recall_nq", 20.0),
                                                     ("recall_drop", 10.0))]
    cells = recall_cells(frame(lm + three + [("m", "recall", "recall_swde", 1024, 5.0)]))
    assert cells.loc["m (lm)", ["SWDE 2K", "SQD 2K", "FDA 2K", "Avg 2K"]].tolist() == [31.0, 41.0, 21.0, 30.5]
    assert cells.loc["m (lm)", ["SWDE 1K", "SQD 1K"]].tolist() == [5.0, 41.0]  # its own SWDE kept, SQuAD borrowed
    assert list(cells.index) == ["m (lm)"]
    own = recall_cells(frame(lm + [("m", "recall", t, 2048, 1.0) for t in TASK_IDS]))
    assert list(own.index) == ["m"] and own.loc["m", "SWDE"] == 1.0  # the suite's own: nothing borrowed
    assert recall_cells(frame(lm)).empty  # the lm suite alone makes no recall table


def test_the_reported_rows_are_gdns_table_4():
    from ccq_eval.report.reference import reference_rows

    rows = reference_rows("recall")
    gdn = rows.loc["Gated DeltaNet [GDN paper (ICLR 2025)] (reported)"]
    assert gdn[["SWDE", "SQD", "FDA", "TQA", "NQ", "Drop", "Avg"]].tolist() == [25.4, 34.8, 23.7, 60.0, 20.0, 19.8,
                                                                                30.6]
    assert len(rows) == 10
    six = rows[["SWDE", "SQD", "FDA", "TQA", "NQ", "Drop"]].mean(axis=1)
    assert ((six - rows["Avg"]).abs() < 0.06).all()  # each reported average is its row's mean, rounded


def test_the_report_marks_the_answer_inside_the_cut_document_else_the_question():
    from ccq_eval.suites.recall import SUITE

    record = {"prompt": "Most people who start a Garden begin too soon. who starts a garden", "question":
              "who starts a garden", "answers": ["nobody", "garden begin"]}
    shown = SUITE.sample_view.context(record, 10)
    assert shown == {"label": "answer in context", "before": "o start a ", "needle": "Garden begin",
                     "after": " too soon."}
    asked_only = SUITE.sample_view.context({**record, "answers": ["a garden"], "prompt": "Nothing here. who starts a garden"}, 8)
    assert asked_only["label"] == "question in context" and asked_only["needle"] == "who starts a garden"
    assert SUITE.sample_view.context({"prompt": 3, "answers": []}, 8) is None
