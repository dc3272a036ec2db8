"""Property-based checks (hypothesis) of the scorers and the truncation rules."""

import string

from hypothesis import given, settings
from hypothesis import strategies as st

from ccq_eval.suites.longbench.data import middle_truncate
from ccq_eval.suites.longbench.scoring import score as longbench_score
from ccq_eval.suites.sniah.scoring import ruler_string_match
from tests.helpers import byte_tokenizer

TOK = byte_tokenizer()
text = st.text(alphabet=string.ascii_letters + string.digits + " .,\n", max_size=200)
values = st.text(alphabet=string.digits, min_size=7, max_size=7)


@given(before=text, value=values, after=text)
def test_ruler_match_finds_the_value_anywhere_in_any_case(before, value, after):
    assert ruler_string_match(before + value + after, [value]) == 1.0
    assert ruler_string_match((before + value + after).upper(), [value.lower()]) == 1.0


@given(prediction=text, value=values)
def test_ruler_match_is_zero_without_the_value(prediction, value):
    if value not in prediction:
        assert ruler_string_match(prediction, [value]) == 0.0


@given(prediction=text, blank=st.text(alphabet=" \n\t", max_size=3))
def test_an_empty_reference_is_never_found(prediction, blank):
    """RULER's ``ref in text`` finds "" in every prediction; here a blank reference never counts."""
    assert ruler_string_match(prediction, [blank]) == 0.0
    assert ruler_string_match(prediction + " 1234567", [blank, "1234567"]) == 0.5


@settings(max_examples=60, deadline=None)
@given(prompt=st.text(alphabet=string.ascii_letters + " \n", min_size=1, max_size=400),
       budget=st.integers(min_value=2, max_value=300))
def test_middle_truncation_fits_and_keeps_both_ends(prompt, budget):
    kept, read, cut = middle_truncate(TOK, prompt, budget)
    assert read == len(TOK(kept)["input_ids"]) <= budget
    if len(prompt) <= budget:
        assert kept == prompt and cut == 0
    else:
        half = budget // 2
        assert kept == prompt[:half] + prompt[-half:] and cut == len(prompt) - 2 * half


@settings(max_examples=60, deadline=None)
@given(task=st.sampled_from(["narrativeqa", "hotpotqa", "triviaqa", "gov_report", "samsum", "lcc", "trec"]),
       prediction=text, answer=st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=40))
def test_longbench_scores_stay_in_range_and_gold_scores_full(task, prediction, answer):
    classes = [answer.strip() or "x", "Other"] if task == "trec" else []
    gold = classes[0] if task == "trec" else answer
    assert 0.0 <= longbench_score(task, prediction, [gold], classes) <= 100.0
    if gold.strip() and task not in ("lcc", "gov_report", "samsum", "trec"):
        normalised = "".join(ch for ch in gold.lower() if ch.isalnum() or ch == " ").split()
        if normalised and not set(normalised) <= {"a", "an", "the"}:
            assert longbench_score(task, gold, [gold], classes) == 100.0


@given(first=st.text(alphabet=string.ascii_letters + " ", min_size=1, max_size=30).filter(str.strip),
       rest=text)
def test_first_line_rule_ignores_everything_after_the_first_line(first, rest):
    answer = first.strip()
    assert longbench_score("triviaqa", "\n" + answer + "\n" + rest, [answer], []) == \
        longbench_score("triviaqa", answer, [answer], [])
