"""Peer check against HazyResearch/prefix-linear-attention's own code (tests/fixtures/recall/recall_samples.json,
written by make_fixtures.py at the commit it records): for the same records, tokenizer and length, ccq-eval's cut
documents in the tasks' prompts equal the reference's, character for character, on a subword tokenizer without and
with a BOS (which the reference's cut counts) and on a SentencePiece tokenizer in a Llama hub layout
(tests/fixtures/tokenizers/llama-spm), and the records it leaves out are the reference's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.recall import data

FIXTURES = Path(__file__).parents[2] / "fixtures" / "recall"
RECORDS = str(SHIPPED_RECORDS)  # recall/<key>.jsonl
FIXTURE = json.loads((FIXTURES / "recall_samples.json").read_text())
TOKENIZERS = {}


def tokenizer(name: str):
    if name not in TOKENIZERS:
        from tests.fixtures.recall.make_fixtures import tokenizers

        TOKENIZERS.update(tokenizers())
    return TOKENIZERS[name]


def test_the_fixture_records_the_reference_commit():
    assert FIXTURE["reference_commit"].startswith("7490f22") and len(FIXTURE["prompts"]) == 18


@pytest.mark.parametrize("case", sorted(FIXTURE["prompts"]))
def test_prompts_are_the_references_for_the_same_records(case):
    name, key, length = case.split("/")
    task = f"recall_{key}"
    docs = data.build(task, data.read_records(task, RECORDS), tokenizer(name), int(length), None)
    theirs = FIXTURE["prompts"][case]
    assert [d["prompt"] for d in docs] == [p for p in theirs if p is not None]
    assert [d["record"] for d in docs] == [i for i, p in enumerate(theirs) if p is not None]


def test_the_fixture_covers_the_rules_that_shape_a_prompt():
    """NQ: an answer found, one only as an alternative, one nowhere (the window centres on the document's end), a
    one-character answer left out; short documents kept whole, with a question repeated at their end removed (NQ
    once and exactly, DROP while it repeats, case-insensitively); TriviaQA's markers removed."""
    bpe = tokenizer("bpe")
    nq = data.build("recall_nq", data.read_records("recall_nq", RECORDS), bpe, 128, None)
    assert [d["answer_in_window"] for d in nq] == [True, True, True, True, False] and len(nq) == 5
    kept = {d["record"]: (d["kept_tokens"], d["document_tokens"]) for d in nq}
    assert kept[0][0] == kept[3][0] == 78 and kept[1][0] == kept[1][1] and kept[2][0] == kept[2][1]
    assert kept[4][0] < 78  # centred on the end: the window's second half runs past it
    assert nq[2]["prompt"].count("name the two words") == 1  # NQ strips exactly: the lower-cased repeat stays
    drop = data.build("recall_drop", data.read_records("recall_drop", RECORDS), bpe, 256, None)
    assert drop[1]["prompt"].lower().count("name the two words") == 1
    tqa = data.build("recall_triviaqa", data.read_records("recall_triviaqa", RECORDS), bpe, 128, None)
    assert not any(marker in d["prompt"] for d in tqa for marker in ("[PAR]", "[DOC]", "[TLE]"))
