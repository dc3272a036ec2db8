"""ccq-eval's BABILong modules against the reference's own code (booydar/babilong, run by
tests/fixtures/babilong/make_fixtures.py into reference.json): every task's prompt in each of the reference's prompt
variants, character for character; ``compare_answers`` on crafted outputs (extra sentences, labels the question names,
qa5's names, qa8's lists, text after an ``<example>``); and ``TaskDataset`` over the shipped bAbI files, sample for
sample (and the small qa6-qa20 stories of tests/fixtures/babilong/babi)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.babilong.babi import BabiError, Story, read_babi
from ccq_eval.suites.babilong.prompts import formatted_input
from ccq_eval.suites.babilong.scoring import correct

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "babilong"
FIXTURE = json.loads((FIXTURES / "reference.json").read_text())
CRAFTED = FIXTURES / "babi"  # small qa6-qa20 stories in bAbI's format, written for the tests
VARIANTS = {"all": {}, "no instruction": {"instruction": False}, "no examples": {"examples": False},
            "no post prompt": {"post_prompt": False},
            "none": {"instruction": False, "examples": False, "post_prompt": False}}


@pytest.mark.parametrize("case", FIXTURE["prompts"], ids=lambda c: f"{c['task']}-{c['variant']}")
def test_prompts_equal_the_references_character_for_character(case):
    assert formatted_input(case["task"], case["context"], case["question"], **VARIANTS[case["variant"]]) == case["prompt"]


@pytest.mark.parametrize("case", FIXTURE["scores"], ids=lambda c: f"{c['task']}-{c['output'][:24]}")
def test_scores_equal_compare_answers(case):
    assert correct(case["target"], case["output"], case["question"], case["task"]) is case["correct"]


def test_the_fixture_scores_both_ways():
    assert {c["correct"] for c in FIXTURE["scores"]} == {True, False}  # the cases can tell a scorer apart


@pytest.mark.parametrize("name", sorted(FIXTURE["stories"]))
def test_the_stories_read_as_task_dataset_reads_them(name):
    folder = CRAFTED if (CRAFTED / name).exists() else Path(SHIPPED_RECORDS) / "babilong"
    stories = read_babi((folder / name).read_text(), name)
    expected = [Story(tuple(s["facts"]), s["question"], s["answer"], tuple(s["references"]))
                for s in FIXTURE["stories"][name]]
    assert stories == expected and len(stories) >= 1


def test_a_line_out_of_babis_format_is_one_line_naming_it():
    with pytest.raises(BabiError, match=r"^qa9\.txt: line 2 is not '<number> <text>'"):
        read_babi("1 Mary went home.\nMary went home.\n", "qa9.txt")
    with pytest.raises(BabiError, match="line 2 is a question without"):
        read_babi("1 Mary went home.\n2 Where is Mary?\t\t\n", "qa9.txt")
    with pytest.raises(BabiError, match="no question"):
        read_babi("1 Mary went home.\n", "qa9.txt")
    assert len(read_babi("1 A went x.\n2 B went y.\n3 Where is A? \tx\t1\n", "t", max_facts=2)) == 0  # too many facts
