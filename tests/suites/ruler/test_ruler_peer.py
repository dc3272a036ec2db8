"""Peer check against NVIDIA/RULER's own generators (tests/fixtures/ruler/ruler_samples.json, written by
make_fixtures.py from RULER's scripts at the commit it records, on a subword tokenizer): every draw RULER made for a
sample (its variable names, values and positions; its sampled words; its coded vocabulary) goes to ccq-eval's
composers, which must write RULER's prompt, answer prefix and answers character for character."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccq_eval.suites.ruler import compose

FIXTURE = json.loads((Path(__file__).parents[2] / "fixtures" / "ruler" / "ruler_samples.json").read_text())


def samples(task: str):
    return [(length, sample) for length, records in FIXTURE["tasks"][task].items() for sample in records]


def of(draws: list, kind: str) -> list:
    return [result for name, result in draws if name == kind]


def chain_from(call: dict, value: str | None = None) -> compose.Chain:
    """A generate_input_output call's chain: the first hops + 1 names drawn (RULER takes those even where it drew
    more to make them distinct), its value, its sorted positions."""
    draws = call["draws"]
    names = tuple("".join(letters) for letters in of(draws, "choices")[:compose.VT_HOPS + 1])
    value = value if value is not None else str(of(draws, "randint")[0])
    return compose.Chain(names, value, tuple(sorted(of(draws, "sample")[0])))


def test_the_fixture_records_rulers_commit_and_every_task():
    assert len(FIXTURE["ruler_commit"]) == 40 and set(FIXTURE["tasks"]) == {"vt", "cwe", "fwe"}


@pytest.mark.parametrize("length,sample", samples("vt"))
def test_variable_tracking_is_rulers_for_the_same_draws(length, sample):
    icl_call = sample["icl_call"]
    icl_chain = chain_from(icl_call, value=compose.VT_ICL_VALUE)
    example = compose.vt_worked_example(icl_call["args"][0], icl_chain)
    assert example == sample["calls"]["randomize_icl"]["args"][0]  # the worked example, as RULER prepends it
    randomising = sample["calls"]["randomize_icl"]
    names = tuple("".join(letters) for letters in of(randomising["draws"], "choices"))
    randomised = compose.vt_randomised(example, names, str(of(randomising["draws"], "randint")[0]))
    assert randomised == randomising["result"]
    call = sample["calls"]["generate_input_output"]
    ours = compose.vt_record(call["args"][0], chain_from(call), randomised)
    assert ours["input"] == sample["input"]
    assert ours["answer_prefix"] == sample["answer_prefix"]
    assert ours["outputs"] == sample["outputs"]
    assert "assigned the value" in ours["answer_prefix"]  # RULER's spelling (lm-eval's port: "assgined")


@pytest.mark.parametrize("length,sample", samples("cwe"))
def test_common_words_extraction_is_rulers_for_the_same_draws(length, sample):
    example_words, words = of(sample["calls"]["generate_input_output"]["draws"], "sample")
    ours = compose.cwe_record(int(length), example_words, words)
    assert ours["input"] == sample["input"]
    assert ours["answer_prefix"] == sample["answer_prefix"]
    assert ours["outputs"] == sample["outputs"] and len(ours["outputs"]) == compose.CWE_COMMON


@pytest.mark.parametrize("length,sample", samples("fwe"))
def test_frequent_words_extraction_is_rulers_for_the_same_draws(length, sample):
    call = sample["calls"]["generate_input_output"]
    vocabulary = compose.fwe_vocabulary(["".join(letters) for letters in of(call["draws"], "choices")])
    ours = compose.fwe_record(call["kwargs"]["num_words"], vocabulary)
    assert ours["input"] == sample["input"]
    assert ours["answer_prefix"] == sample["answer_prefix"]
    assert ours["outputs"] == sample["outputs"] and compose.FWE_NOISE not in ours["outputs"]


def test_below_4096_tokens_cwe_repeats_less_as_ruler_does():
    assert compose.cwe_repeats(2048) == ((20, 3, 1), (6, 1)) and compose.cwe_repeats(4096) == ((40, 10, 3), (30, 3))
    lengths = {length: sample for length, sample in samples("cwe")}
    short, long = lengths["2048"], lengths["4096"]
    word = short["outputs"][0]  # a common word: 6 times in the task's list below 4K, 30 from 4K
    assert short["input"].split("\n")[-2].count(f". {word} ") + short["input"].split("\n")[-2].endswith(f". {word}") == 6
    word = long["outputs"][0]
    assert long["input"].split("\n")[-2].count(f". {word} ") + long["input"].split("\n")[-2].endswith(f". {word}") == 30
