"""A BABILong sample at a model's own length (suites/babilong/noise.py), in a byte tokenizer, a SentencePiece tokenizer
with its own BOS and a byte-level BPE without one: every statement of the bAbI sample is in the prompt, in order, at increasing depths; the
prompt and the 20 tokens to generate fit the length and fill it; the same seed gives the same sample; a length that
cannot hold the statements is one line naming the smallest."""

from __future__ import annotations

from pathlib import Path

import pytest

from ccq_eval.byte_tokenizer import byte_tokenizer
from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.babilong.babi import BabiError, read_babi
from ccq_eval.suites.babilong.noise import OUTPUT_TOKENS, sample_at_length
from tests.helpers import bpe_tokenizer

FILES = {"qa1": "qa1_single-supporting-fact_test.txt", "qa2": "qa2_two-supporting-facts_test.txt",
         "qa3": "qa3_three-supporting-facts_test.txt", "qa4": "qa4_two-arg-relations_test.txt",
         "qa5": "qa5_three-arg-relations_test.txt"}
ESSAYS = [(Path(SHIPPED_RECORDS).parent / "text" / "essays.txt").read_text()]


def spm():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(Path(__file__).resolve().parents[2] / "fixtures" / "tokenizers" /
                                             "llama-spm"))


def stories(task: str):
    return read_babi((Path(SHIPPED_RECORDS) / "babilong" / FILES[task]).read_text(), FILES[task])


@pytest.mark.parametrize("tokenizer_of,length", [(byte_tokenizer, 4096), (spm, 2048), (spm, 8192), (bpe_tokenizer, 2048)],
                         ids=["bytes-4k", "spm-2k", "spm-8k", "bpe-2k"])
@pytest.mark.parametrize("task", sorted(FILES))
def test_every_statement_is_in_the_prompt_in_order_within_the_length(task, tokenizer_of, length):
    tokenizer = tokenizer_of()
    for number, story in enumerate(stories(task)[:3]):
        sample = sample_at_length(task, story, ESSAYS, tokenizer, length, seed=number)
        prompt = sample["prompt"]
        context = prompt[prompt.index("<context>"):prompt.index("</context>")]
        at = 0
        for fact in story.facts:  # each statement found after the one before it (a story may repeat one)
            at = context.index(fact, at) + len(fact)
        assert sample["fact_depths"] == sorted(sample["fact_depths"]) and len(sample["fact_depths"]) == len(story.facts)
        assert sample["prompt_tokens"] == len(tokenizer(prompt)["input_ids"])
        assert length - 40 <= sample["prompt_tokens"] + OUTPUT_TOKENS <= length  # it fills the length
        assert prompt.endswith(f"Question: {story.question.strip()}") and sample["target"] == story.answer
        assert sample == sample_at_length(task, story, ESSAYS, tokenizer, length, seed=number)  # reproducible
    assert sample != sample_at_length(task, story, ESSAYS, tokenizer, length, seed=99)


def test_a_length_that_cannot_hold_the_statements_names_the_smallest():
    story = stories("qa3")[0]  # 38 statements
    with pytest.raises(BabiError, match=r"^--lengths 1024: a qa3 prompt with its 38 statements needs \d+ tokens at "
                                        "least; use a larger length$"):
        sample_at_length("qa3", story, ESSAYS, byte_tokenizer(), 1024, seed=0)
