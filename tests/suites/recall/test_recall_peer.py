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
    assert FIXTURE["reference_commit"].startswith("7490f22") and len(FIXTURE["prompts"]) == 36


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


def test_the_fixture_covers_the_extraction_tasks_rules():
    """SWDE, FDA, SQuAD: the window centres on the key where it comes before the value, on the document's end where
    neither occurs; a one-character value is left out; SWDE's summary never reaches the prompt; FDA's trailing key is
    removed case-insensitively while it repeats; each prompt ends with the key asked, capitalised."""
    bpe = tokenizer("bpe")
    records = data.read_records("recall_swde", RECORDS)
    swde = data.build("recall_swde", records, bpe, 128, None)
    assert [d["record"] for d in swde] == [0, 1, 2, 3, 4] and not any("Summary of" in d["prompt"] for d in swde)
    assert [d["answer_in_window"] for d in swde] == [True, True, True, False, True]
    assert all(d["prompt"].endswith(" " + r["key"].capitalize() + ":") for d, r in zip(swde, records))
    key_first = records[0]["text"].lower().index(records[0]["key"]) < records[0]["text"].lower().index(records[0]["value"])
    assert key_first and records[0]["key"] in swde[0]["prompt"].lower()
    fda = data.build("recall_fda", data.read_records("recall_fda", RECORDS), bpe, 256, None)
    assert fda[2]["prompt"].endswith("do not. . Wildly:")  # the reference's full stop after a stripped key
    squad = data.build("recall_squad", data.read_records("recall_squad", RECORDS), bpe, 128, None)
    assert len(squad) == 5 and squad[3]["kept_tokens"] < 78  # no value found: centred on the end, past it
