"""Peer check of RULER's QA tasks against NVIDIA/RULER's own qa.py (tests/fixtures/ruler/ruler_qa_samples.json,
written by make_fixtures.py at the commit it records, on the small SQuAD / HotpotQA sources qa_sources.py made): the
source read as RULER reads it, and, for the documents RULER drew for a sample, ccq-eval's prompt, answer prefix and
answers equal RULER's character for character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.ruler import qa, qa_data

FIXTURES = Path(__file__).parents[2] / "fixtures" / "ruler"
FIXTURE = json.loads((FIXTURES / "ruler_qa_samples.json").read_text())
TASK = {"squad": "ruler_qa_squad", "hotpotqa": "ruler_qa_hotpot"}


def qa_set(dataset: str) -> qa.QaSet:
    return qa_data.load_source(TASK[dataset], str(SHIPPED_RECORDS)).qa_set


def samples():
    return [(dataset, length, sample) for dataset, by_length in FIXTURE["datasets"].items()
            for length, run in by_length.items() for sample in run["samples"]]


class Replay:
    """random.Random's ``sample`` answering with RULER's recorded draw (checking it was asked for as many)."""

    def __init__(self, drawn: list[int]):
        self.drawn = drawn

    def sample(self, population, k):
        assert k == len(self.drawn) and set(self.drawn) <= set(population)
        return list(self.drawn)


@pytest.mark.parametrize("dataset", ["squad", "hotpotqa"])
def test_the_source_reads_as_ruler_reads_it(dataset):
    ours = qa_set(dataset)
    for run in FIXTURE["datasets"][dataset].values():
        assert list(ours.documents) == run["docs"]
        theirs = [(q["query"], q["outputs"], q["context"], q.get("more_context", [])) for q in run["qas"]]
        assert [(q.query, list(q.outputs), list(q.context), list(q.more_context)) for q in ours.questions] == theirs


def test_squad_skips_unanswerable_questions_and_hotpot_keeps_answers_absent_from_the_documents():
    squad, hotpot = qa_set("squad"), qa_set("hotpotqa")
    assert all(q.outputs for q in squad.questions) and len(squad.questions) == 48  # 24 paragraphs x 2; 4 dropped
    assert any(q.outputs == ("yes",) for q in hotpot.questions)


@pytest.mark.parametrize("dataset,length,sample", samples())
def test_a_prompt_is_rulers_for_the_same_draws(dataset, length, sample):
    ours_set = qa_set(dataset)
    index, count = sample["call"]["args"]
    question = ours_set.questions[index]
    drawn = [result for name, result in sample["call"]["draws"] if name == "sample"]
    chosen = qa.chosen_documents(question, len(ours_set.documents), count, Replay(drawn[0] if drawn else []))
    ours = qa.qa_record(question, [ours_set.documents[i] for i in chosen])
    assert ours["input"] == sample["input"]
    assert ours["answer_prefix"] == sample["answer_prefix"] == " Answer:"
    assert ours["outputs"] == sample["outputs"]


def test_the_fixture_exercises_both_ways_of_choosing_documents():
    """SQuAD prompts draw from their article alone, or past it from the rest; HotpotQA's always draw from the rest."""
    counts = {(d, s["call"]["args"][1] - len(qa_set(d).questions[s["call"]["args"][0]].context)
               > len(qa_set(d).questions[s["call"]["args"][0]].more_context)) for d, _, s in samples()}
    assert counts == {("squad", False), ("squad", True), ("hotpotqa", True)}


def test_string_match_part_is_any_reference_in_the_prediction():
    assert qa.string_match_part("It was The Garden, I think", ["garden", "lawn"]) == 1.0
    assert qa.string_match_part("the lawn", ["garden"]) == 0.0
