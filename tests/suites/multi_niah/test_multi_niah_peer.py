"""Peer check against RULER's generator (niah.py, run as lm-eval's port of it, which is importable offline).

1. Exact: RULER's generate_input_output runs with its draws recorded (the keys and values it generates, the depths
   or line indices and the asked keys it samples); ccq-eval's compose() gets the same draws and the same haystack
   and must write the same prompt, character for character, and the same answers. The essay tasks run on the
   shipped essays (RULER's sentence splitter: the same trained Punkt, tests/suites/sniah/test_sentences.py).
2. Whole samples: RULER's generate_samples and ccq-eval's generate() on the same tokenizer and length agree on the
   template, answer prefix, the number of answers, that every answer is an asked needle's value, and the budget.
"""

import random
import re
import sys

import pytest

from ccq_eval.suites.multi_niah import data as multi
from ccq_eval.suites.sniah import data as sniah
from ccq_eval.suites.sniah.haystack import load_haystack
from ccq_eval.suites.sniah.sentences import split_sentences
from tests.helpers import byte_tokenizer

NEEDLE = re.compile(r"One of the special magic (numbers|uuids) for (.+?) is: (\S+)\.")  # a key may hold a space
# scripts/synthetic.yaml's arguments for each task (NVIDIA/RULER)
RULER = {"niah_multikey_1": dict(type_haystack="essay", type_needle_k="words", type_needle_v="numbers", num_needle_k=4),
         "niah_multikey_2": dict(type_haystack="needle", type_needle_k="words", type_needle_v="numbers"),
         "niah_multikey_3": dict(type_haystack="needle", type_needle_k="uuids", type_needle_v="uuids"),
         "niah_multivalue": dict(type_haystack="essay", type_needle_k="words", type_needle_v="numbers", num_needle_v=4),
         "niah_multiquery": dict(type_haystack="essay", type_needle_k="words", type_needle_v="numbers", num_needle_q=4)}


@pytest.fixture(scope="module")
def ruler():
    import nltk

    original = nltk.download
    nltk.download = lambda *args, **kwargs: False  # its import-time download of punkt_tab: stubbed
    try:
        sys.modules.pop("lm_eval.tasks.ruler.prepare_niah", None)
        from lm_eval.tasks.ruler import niah_utils, prepare_niah
    finally:
        nltk.download = original
    return prepare_niah, niah_utils


class RecordingRandom:
    """The random module, with every ``sample`` it answers recorded."""

    def __init__(self):
        self.samples = []

    def __getattr__(self, name):
        return getattr(random, name)

    def sample(self, population, k):
        drawn = random.sample(population, k)
        self.samples.append(drawn)
        return drawn


def ruler_with_draws(ruler, monkeypatch, task, units, words):
    """RULER's (input, answers) for one sample of ``units`` haystack units, and what it drew."""
    prepare_niah, niah_utils = ruler
    generated, recorder = [], RecordingRandom()
    real = prepare_niah.generate_random
    monkeypatch.setattr(prepare_niah, "generate_random", lambda kind: generated.append(real(kind)) or generated[-1])
    monkeypatch.setattr(prepare_niah, "random", recorder)
    monkeypatch.setattr(prepare_niah, "cached_sent_tokenize", lambda text: list(split_sentences(text)))
    args = {"num_needle_k": 1, "num_needle_v": 1, "num_needle_q": 1, **RULER[task]}
    args["num_needle_k"] = max(args["num_needle_k"], args["num_needle_q"])  # as generate_samples passes it
    haystack = words if args["type_haystack"] == "essay" else sniah.NEEDLE.replace("{type_plural}", "{type_needle_v}")
    text, answers, _ = prepare_niah.generate_input_output(units, haystack, template=niah_utils.TEMPLATE, **args)
    return text, answers, generated, recorder.samples


@pytest.mark.parametrize("task", list(multi.VARIANTS))
@pytest.mark.parametrize("units", [40, 600])
def test_the_prompt_is_rulers_for_the_same_draws(ruler, monkeypatch, task, units):
    variant = multi.VARIANTS[task]
    words = load_haystack().text.split(" ")[:units]
    random.seed(units)
    theirs, answers, generated, sampled = ruler_with_draws(ruler, monkeypatch, task, units, words)
    per_key = 1 + variant.values
    head = generated[:variant.key_count * per_key]
    keys = tuple(head[0::per_key])
    values = tuple(tuple(head[i + 1:i + per_key]) for i in range(0, len(head), per_key))
    drawn = multi.Draw(keys, values, tuple(sampled[-1]), 0)
    if variant.haystack == "essay":
        filler = list(split_sentences(" ".join(words).strip()))
    else:
        pairs = generated[len(head):]
        filler = [sniah.NEEDLE.format(type_plural=variant.value, key=k, value=v) for k, v in zip(pairs[0::2], pairs[1::2])]
        assert len(filler) == units
    ours = multi.compose(variant, drawn, filler, sampled[0])
    assert ours["input"] == theirs
    assert ours["outputs"] == answers and len(answers) == variant.queries * variant.values
    assert len(NEEDLE.findall(theirs)) == variant.needles + (units if variant.haystack == "needle" else 0)


@pytest.mark.parametrize("task", list(multi.VARIANTS))
def test_whole_samples_share_template_prefix_answers_and_budget(ruler, task):
    prepare_niah, niah_utils = ruler
    tok, length = byte_tokenizer(), 2048
    variant = multi.VARIANTS[task]
    kind = "needle" if variant.haystack == "needle" else "repeat"  # RULER's essays are a download: its filler
    args = {k: v for k, v in RULER[task].items() if k != "type_haystack"}
    theirs = prepare_niah.generate_samples(prepare_niah.get_haystack(type_haystack=kind), TOKENIZER=tok,
                                           max_seq_length=length, template=niah_utils.TEMPLATE, type_haystack=kind,
                                           num_samples=4, **args)
    ours = multi.generate(task, tok, length, 4, seed=0, haystack=load_haystack())

    def shape(record):
        query = record["gen_prefix"].split(" for ", 1)[1].rsplit(" mentioned", 1)[0]
        question = record["input"].rsplit("\n", 1)[1]
        return (record["input"].split("\n", 1)[0], question.replace(query, "{query}"),
                record["gen_prefix"].replace(query, "{query}"), len(record["outputs"]))

    for t, o in zip(theirs, ours):
        assert shape(o) == shape(t)
        for record in (t, o):  # every answer is a needle's value, and the prompt fits L - 128
            values = [v for _, _, v in NEEDLE.findall(record["input"])]
            assert all(answer in values for answer in record["outputs"])
        assert len(tok(o["input"] + " " + o["gen_prefix"])["input_ids"]) + 128 <= length
        assert len(tok(t["input"])["input_ids"]) + 128 <= length
        if variant.haystack == "needle":  # the binary search leaves no more slack than RULER's steps of 5 lines
            assert o["haystack_units"] >= t["input"].count("\n") - 2 - 5
