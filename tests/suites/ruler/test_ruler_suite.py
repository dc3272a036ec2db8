"""`ccq-eval --suite ruler` end to end: a scripted solver that works each task out of the prompt alone (follows VT's
chain, counts CWE's and FWE's words, finds QA's answer in its documents) through lm-eval scores 100 on every task, a
solver answering the distractors scores 0, the stored samples and settings carry each task's own budget, the RULER table averages a length's tasks,
and a zoo model runs through the command line."""

from __future__ import annotations

import json
import re
from collections import Counter

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites.ruler import TOKENS_TO_GENERATE
from ccq_eval.suites.sniah.scoring import ruler_string_match
from tests.oracle import answers_loader, stored_units as stored

QA = ("ruler_qa_squad", "ruler_qa_hotpot")
TASKS = tuple(t for t in TOKENS_TO_GENERATE if t not in QA)
QA_DATA = str(SHIPPED_RECORDS)  # ruler/<squad|hotpotqa>.jsonl
ASSIGN = re.compile(r"^VAR (\w+) = (?:VAR )?(\w+) ?$", re.MULTILINE)


def solve(prompt: str, wrong: bool) -> list[str]:
    """The answers, worked out of the prompt's text as a reader would (the last task in it, after any worked
    example); ``wrong``: the same number of answers, none of them right."""
    if prompt.startswith("Answer the question based on the given documents."):  # QA (the fixture's questions)
        question = prompt.rsplit("Question: ", 1)[1]
        if question.startswith("Is "):
            return ["no" if wrong else "yes"]
        phrase = re.search(r'What follows "(.+)"\?', question).group(1)
        after = prompt.split(phrase + " ", 1)[1].split()
        return ["zzz qqq"] if wrong else [" ".join(after[:2])]
    if "variable assignment" in prompt:
        task = prompt.rsplit("Memorize and track", 1)[1]
        value = re.search(r"assigned the value (\d+), they are:", task).group(1)
        holds, assigned = {value}, dict(ASSIGN.findall(task))
        while any(source in holds and name not in holds for name, source in assigned.items()):
            holds |= {name for name, source in assigned.items() if source in holds}
        answers = sorted(holds - {value})
        return [name for name in assigned if name not in holds][:len(answers)] if wrong else answers
    if "numbered list of words" in prompt:
        listing = prompt.rsplit("Below is a numbered list", 1)[1].split("\n")[1]
        counts = Counter(word for word in listing.split() if not word.endswith("."))
        ranked = [word for word, _ in counts.most_common()]
        return ranked[10:20] if wrong else ranked[:10]
    text = prompt.rsplit("coded words. ", 1)[1].split("\nQuestion")[0]
    ranked = [word for word, _ in Counter(w for w in text.split() if w != "...").most_common()]
    return ranked[3:6] if wrong else ranked[:3]


def solver_loader(wrong: bool):
    return answers_loader(f"solver-{wrong}", lambda prompt: " " + " ".join(solve(prompt, wrong)))


@pytest.mark.parametrize("wrong,expected", [(False, 100.0), (True, 0.0)])
def test_a_solver_scores_100_and_one_answering_distractors_0(tmp_path, wrong, expected):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="solver", suite="ruler", tasks=",".join(TASKS), lengths="8k", samples=3,
                         store=str(store), label="solver")
    assert run_suite(request, solver_loader(wrong), out=lambda *_: None) == 0
    metrics, samples = stored(store)
    assert {t: metrics[(t, 8192, "score")] for t in TASKS} == {t: expected for t in TASKS}
    assert len(samples) == 3 * len(TASKS)
    for task, settings, score, target, prediction, fields in samples:
        fields, settings = json.loads(fields), json.loads(settings)
        assert settings["tokens_to_generate"] == TOKENS_TO_GENERATE[task]
        assert fields["prompt_tokens"] + TOKENS_TO_GENERATE[task] <= 8192
        assert len(target.split(", ")) == {"ruler_vt": 5, "ruler_cwe": 10, "ruler_fwe": 3}[task]
        assert score == 100 * ruler_string_match(prediction, target.split(", "))


def test_the_report_shows_vts_assignment_and_the_others_question():
    from ccq_eval.byte_tokenizer import byte_tokenizer
    from ccq_eval.suites.ruler import SUITE, data

    vt = data.generate("ruler_vt", byte_tokenizer(), 4096, 1, seed=0)[0]
    shown = SUITE.sample_view.context(vt, 80)
    assert shown["needle"].startswith(f"VAR {vt['outputs'][0]} = ") and len(shown["before"]) == 80
    assert shown["needle"].split()[-1] in vt["gen_prefix"]  # the value the question asks about
    fwe = data.generate("ruler_fwe", byte_tokenizer(), 2048, 1, seed=0)[0]
    assert SUITE.sample_view.context(fwe, 80)["needle"].startswith("Question: Do not provide any explanation.")
    assert SUITE.sample_view.context({"input": 3, "outputs": []}, 80) is None


def test_a_length_a_task_cannot_hold_is_refused_before_the_model_loads(tmp_path, capsys):
    from ccq_eval.cli import main

    code = main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_cwe", "--lengths", "4096",
                 "--samples", "2", "--store", str(tmp_path / "ccq.db")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "4096 tokens cannot hold every ruler_cwe prompt" in err[0]
    assert not (tmp_path / "ccq.db").exists()


def test_the_table_shows_each_task_and_a_lengths_average(tmp_path):
    from ccq_eval.report.results import results_of
    from ccq_eval.store import Store
    from ccq_eval.catalogue.ruler import ruler_cells

    store = tmp_path / "ccq.db"
    for wrong, label in ((False, "right"), (True, "wrong")):
        request = RunRequest(model="solver", suite="ruler", tasks=",".join(TASKS), lengths="8k", samples=2,
                             store=str(store), label=label)
        assert run_suite(request, solver_loader(wrong), out=lambda *_: None) == 0
    cells = ruler_cells(results_of(Store(store, readonly=True)).metrics)
    assert list(cells.columns) == ["VT 8K", "CWE 8K", "FWE 8K", "avg 8K"]
    assert cells.loc["right"].tolist() == [100.0] * 4 and cells.loc["wrong"].tolist() == [0.0] * 4


def test_a_zoo_model_runs_through_the_command_line(tmp_path):
    from ccq_eval.cli import main

    store = tmp_path / "ccq.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_vt,ruler_fwe", "--lengths", "2048",
                 "--samples", "2", "--store", str(store)]) == 0
    metrics, samples = stored(store)
    assert {(t, m) for t, _, m in metrics} >= {(t, "score") for t in ("ruler_vt", "ruler_fwe")}
    assert all(0 <= metrics[(t, 2048, "score")] <= 100 for t in ("ruler_vt", "ruler_fwe"))
    assert len(samples) == 4 and all(json.loads(f)["answer_nll"] > 0 for *_, f in samples)


@pytest.mark.parametrize("wrong,expected", [(False, 100.0), (True, 0.0)])
def test_qa_scores_any_answer_found_and_records_its_documents(tmp_path, wrong, expected):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="solver", suite="ruler", tasks=",".join(QA), lengths="4k", samples=3,
                         store=str(store), label="solver", data_dir=QA_DATA)
    assert run_suite(request, solver_loader(wrong), out=lambda *_: None) == 0
    metrics, samples = stored(store)
    assert {t: metrics[(t, 4096, "score")] for t in QA} == {t: expected for t in QA}
    for task, settings, score, target, prediction, fields in samples:
        settings = json.loads(settings)
        assert settings["tokens_to_generate"] == 32
        assert settings["documents"]["name"] == {"ruler_qa_squad": "squad", "ruler_qa_hotpot": "hotpotqa"}[task]
        assert json.loads(fields)["prompt_tokens"] + 32 <= 4096


def test_qa_without_its_documents_is_refused_in_one_line_before_the_model_loads(tmp_path, capsys):
    from ccq_eval.cli import main

    code = main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_qa_squad", "--lengths", "4096",
                 "--samples", "2", "--store", str(tmp_path / "ccq.db"), "--data-dir", str(tmp_path)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "squad" in err[0] and "ccq-eval data fetch ruler" in err[0]
    assert not (tmp_path / "ccq.db").exists()


def test_a_length_needing_more_documents_than_the_source_holds_is_refused(tmp_path, capsys):
    from ccq_eval.cli import main

    code = main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_qa_squad", "--lengths", "32k",
                 "--samples", "2", "--store", str(tmp_path / "ccq.db"), "--data-dir", QA_DATA])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and "documents" in err[0] and "repeat" in err[0]


def test_the_report_marks_qas_answer_inside_a_document_not_in_the_question():
    from ccq_eval.suites.ruler import SUITE

    prompt = ("The following are given documents.\n\nDocument 1:\nA garden needs water.\n\nDocument 2:\nThe beans "
              "grow slowly.\n\nAnswer the question.\n\nQuestion: What grow slowly? Beans?")
    shown = SUITE.sample_view.context({"input": prompt, "outputs": ["nothing", "beans"]}, 20)
    assert shown["label"] == "answer in context" and shown["needle"] == "beans"
    assert prompt.index(shown["before"] + shown["needle"]) < prompt.index("Question:")
    unanswered = SUITE.sample_view.context({"input": prompt, "outputs": ["roses"]}, 20)
    assert unanswered["label"] == "question in context" and unanswered["needle"].startswith("Question: What")
