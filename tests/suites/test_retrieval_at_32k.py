"""All thirteen RULER tasks at 32K on two subword tokenizers with their own BOS (a byte-level BPE, and SentencePiece
read from a Llama hub layout): S-NIAH-1/2/3, the five multi-needle tasks and VT, CWE, FWE and QA-1/2. Each prompt,
as the model reads it, plus its generated tokens fills 32K and never passes it; it holds its answers; and no
sentence, line or document repeats inside it, where the task's haystack is made of them (S-NIAH-1's five noise
sentences repeat by RULER's definition). The haystacks are long local stand-ins written by the test: essays of
distinct sentences, SQuAD- and HotpotQA-shaped rows of distinct paragraphs."""

from __future__ import annotations

import json
import random
import re
from collections import Counter

import pytest

from ccq_eval.suites.sniah.sizing import count_tokens, prompt_of

LENGTH = 32768
SNIAH = ("sniah_1", "sniah_2", "sniah_3")
MULTI = ("niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery")
RULER = ("ruler_vt", "ruler_cwe", "ruler_fwe", "ruler_qa_squad", "ruler_qa_hotpot")
NOUNS = ("lantern", "harbour", "orchard", "ledger", "bridge", "kettle", "meadow", "archive", "signal", "compass")
VERBS = ("painted", "mended", "counted", "carried", "measured", "described", "followed", "opened")


def sentence(i: int) -> str:
    """A sentence no other i gives (its number spelled out in digits), of ordinary words."""
    rng = random.Random(i)
    return (f"The {rng.choice(NOUNS)} numbered {i} was {rng.choice(VERBS)} by a {rng.choice(NOUNS)} keeper "
            f"before the {rng.choice(NOUNS)} of the {rng.choice(NOUNS)} closed.")


@pytest.fixture(scope="module", params=["bpe+bos", "llama-spm"])
def subword(request):
    """Byte-level BPE with a BOS added; SentencePiece read from a Llama hub layout (its BOS, byte fallback)."""
    if request.param == "llama-spm":
        from tests.fixtures.recall.make_fixtures import llama_spm_tokenizer

        return llama_spm_tokenizer()
    from tests.fixtures.ruler.make_fixtures import subword_tokenizer_with_bos

    return subword_tokenizer_with_bos()


@pytest.fixture(scope="module")
def long_data(tmp_path_factory):
    """A folder of essays of 24,000 distinct sentences, and ruler/squad.jsonl and ruler/hotpotqa.jsonl far longer
    than 32K tokens, every paragraph distinct."""
    root = tmp_path_factory.mktemp("long")
    (root / "essays.txt").write_text("\n\n".join(" ".join(sentence(p * 12 + s) for s in range(12))
                                                 for p in range(2000)) + "\n")
    (root / "ruler").mkdir()
    squad = [{"title": f"Article {a}", "context": " ".join(sentence(100_000 + (a * 8 + p) * 5 + s) for s in range(5)),
              "question": f"What was numbered {100_000 + (a * 8 + p) * 5 + 2}?", "answers": [f"{100_000 + (a * 8 + p) * 5 + 2}"]}
             for a in range(60) for p in range(8)]
    (root / "ruler" / "squad.jsonl").write_text("".join(json.dumps(r) + "\n" for r in squad))
    hotpot = []
    for q in range(120):
        docs = [[f"Title {q}-{d}", [sentence(300_000 + (q * 10 + d) * 3 + s) + " " for s in range(3)]] for d in range(10)]
        hotpot.append({"question": f"Which keeper saw number {300_000 + q * 30}?", "answer": f"{300_000 + q * 30}",
                       "context": docs})
    (root / "ruler" / "hotpotqa.jsonl").write_text("".join(json.dumps(r) + "\n" for r in hotpot))
    return root


def generate(task: str, tokenizer, data) -> tuple[list[dict], int]:
    """One sample of ``task`` at 32K and the tokens it generates."""
    from ccq_eval.suites.sniah.haystack import load_haystack

    essays = load_haystack(str(data / "essays.txt"))
    if task in SNIAH:
        from ccq_eval.suites.sniah import data as sniah
        from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE

        return sniah.generate(task, tokenizer, LENGTH, 1, seed=0, haystack=essays), TOKENS_TO_GENERATE
    if task in MULTI:
        from ccq_eval.suites.multi_niah import data as multi
        from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE

        return multi.generate(task, tokenizer, LENGTH, 1, seed=0, haystack=essays), TOKENS_TO_GENERATE
    from ccq_eval.suites.ruler import TOKENS_TO_GENERATE, qa_data
    from ccq_eval.suites.ruler import data as ruler

    sources = qa_data.sources((task,), str(data))
    return ruler.generate(task, tokenizer, LENGTH, 1, seed=0, haystack=sources or None), TOKENS_TO_GENERATE[task]


def repeated_units(task: str, prompt: str) -> list[str]:
    """What occurs twice inside a prompt among the units its haystack is made of."""
    if task in ("ruler_qa_squad", "ruler_qa_hotpot"):
        units = re.findall(r"Document \d+:\n(.*?)(?=\n\nDocument \d+:|\n\n\S[^\n]*$)", prompt, flags=re.S)
    elif task in ("niah_multikey_2", "niah_multikey_3"):
        units = [line for line in prompt.splitlines() if line.startswith("One of the special magic")]
    elif task in ("sniah_1", "ruler_vt", "ruler_cwe", "ruler_fwe"):
        return []  # RULER's noise sentences, word lists and coded words repeat by definition
    else:
        units = re.findall(r"The \w+ numbered \d+ [^.]*\.", prompt)
    assert len(units) > 50, (task, len(units))  # the haystack really is made of these units
    return [unit for unit, n in Counter(units).items() if n > 1]


@pytest.mark.parametrize("task", SNIAH + MULTI + RULER)
def test_every_retrieval_task_fills_32k_with_nothing_repeated(subword, long_data, task):
    (record,), to_generate = generate(task, subword, long_data)
    tokens = count_tokens(subword, prompt_of(record))
    assert tokens + to_generate <= LENGTH and tokens + to_generate >= LENGTH - 400, tokens  # filled, never past
    assert all(answer in record["input"] for answer in record["outputs"])
    assert repeated_units(task, record["input"]) == []
