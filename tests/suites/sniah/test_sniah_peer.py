"""Peer check: lm-eval's own niah_single_1 data and ccq-eval's S-NIAH-1 for the same tokenizer and
length share the template, the needle, the answer prefix and the token budget."""

import re
import sys

import pytest

from ccq_eval.suites.sniah import data as sniah
from tests.helpers import byte_tokenizer


@pytest.fixture(scope="module")
def lm_eval_niah(tmp_path_factory):
    """lm-eval's RULER generator, imported offline: its module calls nltk.download at import time,
    so that is stubbed (and recorded) — S-NIAH-1's repeated filler needs no sentence splitter."""
    import nltk

    calls = []
    original = nltk.download
    nltk.download = lambda *args, **kwargs: calls.append(args) or False
    try:
        sys.modules.pop("lm_eval.tasks.ruler.prepare_niah", None)
        from lm_eval.tasks.ruler import niah_utils, prepare_niah
    finally:
        nltk.download = original
    return prepare_niah, niah_utils, calls


def _split(prompt: str):
    """(text before the context, text after it) of a single-needle prompt."""
    head, rest = prompt.split("\n", 1)
    context, tail = rest.rsplit("\n", 1)
    return head, context, tail


def test_same_template_needle_prefix_and_budget(lm_eval_niah):
    prepare_niah, niah_utils, nltk_calls = lm_eval_niah
    assert all(call == ("punkt_tab",) for call in nltk_calls)  # the only download it tried, stubbed
    tok = byte_tokenizer()
    length = 2048
    theirs = prepare_niah.generate_samples(
        prepare_niah.get_haystack(type_haystack="repeat"), TOKENIZER=tok, max_seq_length=length,
        template=niah_utils.TEMPLATE, type_haystack="repeat", type_needle_k="words", type_needle_v="numbers",
        num_samples=5)
    ours = sniah.generate("sniah_1", tok, length, 5, seed=0, haystack=None)
    needle = re.compile(r"^One of the special magic numbers for (.+) is: (\d{7})\.$")
    for t, o in zip(theirs, ours):
        t_head, t_context, t_tail = _split(t["input"])
        o_head, o_context, o_tail = _split(o["input"])
        assert o_head == t_head
        assert o_tail.replace(o["key"], "{key}") == t_tail.replace(t_tail.split(" for ")[1].rsplit(" mentioned")[0], "{key}")
        assert o["gen_prefix"].replace(o["key"], "{key}") == t["gen_prefix"].replace(
            t["gen_prefix"].split(" for ")[1].rsplit(" mentioned")[0], "{key}")
        for context in (t_context, o_context):
            lines = context.split("\n")
            assert sum(bool(needle.match(line)) for line in lines) == 1
            assert set(lines) - {sniah.REPEAT_FILLER} == {next(line for line in lines if needle.match(line))}
        # the same budget: what lm-eval counts fits L - 128, and so does our prompt with its prefix
        assert len(tok(t["input"])["input_ids"]) + 128 <= length
        assert len(tok(sniah.prompt_of(o))["input_ids"]) + 128 <= length
        # and the binary search never leaves more slack than lm-eval's steps of 5 repetitions
        assert o["haystack_units"] >= t_context.count(sniah.REPEAT_FILLER) - 1
