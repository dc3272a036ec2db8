"""RULER's VT, CWE, FWE and QA samples as ccq-eval draws and sizes them (suites/ruler/data.py): every prompt, as
the model reads it, plus the task's tokens to generate fills the length and never passes it, on a subword tokenizer
with its own BOS and on bytes; the draws are seeded; and what RULER leaves undefined is refused in one line."""

from __future__ import annotations

import pytest

from ccq_eval.byte_tokenizer import byte_tokenizer
from ccq_eval.suites.ruler import compose, data
from ccq_eval.suites.sniah.sizing import SniahError, count_tokens, prompt_of

QA = ("ruler_qa_squad", "ruler_qa_hotpot")
TASKS = tuple(t for t in data.TOKENS_TO_GENERATE if t not in QA)


def qa_sources():
    from ccq_eval.data import SHIPPED_RECORDS
    from ccq_eval.suites.ruler import qa_data

    return qa_data.sources(QA, str(SHIPPED_RECORDS))


@pytest.fixture(scope="module")
def subword():
    """Byte-level BPE trained on the shipped essays, a BOS added to every encoding."""
    from tests.fixtures.ruler.make_fixtures import subword_tokenizer_with_bos

    return subword_tokenizer_with_bos()


@pytest.mark.parametrize("task", TASKS)
@pytest.mark.parametrize("length", [1024, 4096])
def test_every_prompt_fills_its_length_and_never_passes_it(subword, task, length):
    to_generate = data.TOKENS_TO_GENERATE[task]
    records = data.generate(task, subword, length, 4, seed=0)
    for index, record in enumerate(records):
        tokens = count_tokens(subword, prompt_of(record))
        assert record["index"] == index and record["length"] == tokens + to_generate <= length
        assert tokens + to_generate >= length - 100  # filled: one more unit would not fit
        assert all(answer in record["input"] for answer in record["outputs"])
        assert not record["gen_prefix"].startswith(" ") and record["gen_prefix"].startswith("Answer:")
    assert len({r["input"] for r in records}) == len(records)


def test_the_answers_are_each_tasks_own():
    tok = byte_tokenizer()
    vt = data.generate("ruler_vt", tok, 8192, 2, seed=0)[0]
    chain = [line for line in vt["input"].split("\n") if line.startswith("VAR ")][-5:]  # after the worked example's
    assert [line.split()[1] for line in chain] == vt["outputs"] and len(set(vt["outputs"])) == 5
    assert vt["gen_prefix"].endswith(f"5 variables are assigned the value {chain[0].split()[-1]}, they are: ")
    cwe = data.generate("ruler_cwe", tok, 8192, 1, seed=0)[0]
    listing = cwe["input"].rsplit("\n", 2)[-2]
    counts = {word: listing.split().count(word) for word in set(listing.split()) if not word[0].isdigit()}
    assert len(cwe["outputs"]) == 10 and {counts[w] for w in cwe["outputs"]} == {30}
    assert {c for w, c in counts.items() if w not in cwe["outputs"]} == {3}
    fwe = data.generate("ruler_fwe", tok, 8192, 1, seed=0)[0]
    words = fwe["input"].split("coded words. ", 1)[1].split("\nQuestion")[0].split()
    ranked = sorted(set(words), key=lambda w: -words.count(w))
    assert ranked[0] == compose.FWE_NOISE and ranked[1:4] == fwe["outputs"]


@pytest.mark.parametrize("task,length", [("ruler_qa_squad", 768), ("ruler_qa_squad", 960),
                                         ("ruler_qa_hotpot", 1024)])
def test_qa_prompts_fill_their_length_with_the_questions_in_rulers_order(subword, task, length):
    sources = qa_sources()
    records = data.generate(task, subword, length, 4, seed=0, haystack=sources)
    questions = sources[task].qa_set.questions
    for index, record in enumerate(records):
        tokens = count_tokens(subword, prompt_of(record))
        assert record["length"] == tokens + 32 <= length and tokens + 32 >= length - 120  # one more document
        assert record["input"].endswith(f"Question: {questions[index].query}")  # RULER's: question i for sample i
        assert record["outputs"] == list(questions[index].outputs) and record["gen_prefix"] == "Answer:"
        assert record["input"].count("Document ") == record["haystack_units"]


def test_qa_documents_never_repeat_in_a_prompt_and_are_seeded(subword):
    sources = qa_sources()
    first, again = (data.generate("ruler_qa_squad", subword, 960, 3, seed=1, haystack=sources) for _ in range(2))
    assert first == again
    other = data.generate("ruler_qa_squad", subword, 960, 3, seed=2, haystack=sources)
    assert [r["input"] for r in other] != [r["input"] for r in first]
    for record in first:
        documents = record["input"].split("Document ")[1:]
        bodies = [d.split(":\n", 1)[1].split("\n\nAnswer the question")[0].strip() for d in documents]
        assert len(set(bodies)) == len(bodies)


@pytest.mark.parametrize("task", TASKS)
def test_the_draws_are_seeded(task):
    tok = byte_tokenizer()
    first, again = (data.generate(task, tok, 8192, 2, seed=1) for _ in range(2))
    assert first == again
    assert data.generate(task, tok, 8192, 2, seed=2)[0]["input"] != first[0]["input"]


def test_the_worked_example_fills_its_500_tokens():
    tok = byte_tokenizer()
    noises, chain = data.vt_example(tok, seed=0)
    assert count_tokens(tok, compose.vt_worked_example(noises, chain)) <= data.VT_EXAMPLE_TOKENS
    assert count_tokens(tok, compose.vt_worked_example(noises + 1, chain)) > data.VT_EXAMPLE_TOKENS - 90


@pytest.mark.parametrize("task,length", [("ruler_vt", 1024), ("ruler_cwe", 4096)])
def test_a_length_that_cannot_hold_rulers_smallest_prompt_is_refused(task, length):
    tok = byte_tokenizer()  # bytes: VT's worked example and CWE's long-context lists outgrow these lengths
    smallest = data.smallest_length(task, tok, None, length, 2, seed=0)
    assert smallest > length
    with pytest.raises(SniahError, match=f"length {length}: the {task} prompt alone needs"):
        data.generate(task, tok, length, 2, seed=0)
    assert len(data.generate(task, tok, 2 * length, 1, seed=0)) == 1


class Doubled:
    """A tokenizer that spends two tokens on every byte."""

    def __call__(self, text):
        return {"input_ids": [0] * (2 * len(text.encode()))}


def test_a_tokenizer_that_cannot_fit_the_worked_example_is_refused():
    with pytest.raises(SniahError, match="worked example alone.*subword tokenizer"):
        data.vt_example(Doubled(), seed=0)


def test_cwe_past_the_word_lists_is_refused(monkeypatch):
    monkeypatch.setattr(data, "cwe_words", lambda: tuple(f"w{i}" for i in range(60)))
    with pytest.raises(SniahError, match="more than the 60 words"):
        data.generate("ruler_cwe", byte_tokenizer(), 8192, 1, seed=0)
