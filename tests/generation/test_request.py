"""generation/request.py: when a row stops (each rule on its own, and the predicate's count of steps)."""

from __future__ import annotations

from ccq_eval.generation.request import Request, Result, StopRule
from tests.helpers import byte_tokenizer

TOKENIZER = byte_tokenizer()


def ids(text: str) -> list[int]:
    return TOKENIZER.encode(text, add_special_tokens=False)


def run(request: Request, text: str) -> tuple[int, Result]:
    """How many tokens of ``text`` the row takes before it stops (len(text) if never)."""
    rule, result = StopRule(request, TOKENIZER), Result()
    for token in ids(text):
        result.tokens.append(token)
        if rule.done(result):
            break
    return len(result.tokens), result


def test_the_budget_ends_a_row():
    assert run(Request((1,), max_new_tokens=3), "abcdef")[0] == 3


def test_a_stop_token_ends_a_row_and_stays_in_it_but_not_before_min_new_tokens():
    newline = ids("\n")[0]
    rule = StopRule(Request((1,), 9, stop_ids=frozenset({newline}), min_new_tokens=1), TOKENIZER)
    assert rule.banned(0) == {newline} and rule.banned(1) == frozenset()
    assert run(Request((1,), 9, stop_ids=frozenset({newline})), "ab\ncd")[0] == 3


def test_a_stop_string_ends_a_row_once_its_tail_holds_it():
    assert run(Request((1,), 20, until=("END",)), "abcENDxyz")[0] == 6
    assert run(Request((1,), 20, until=("END",)), "abcENxyz")[0] == 8  # never whole: to the end


def test_a_predicate_ends_its_row_once_it_holds_and_counts_each_token_it_was_asked_about():
    taken, result = run(Request((1,), 20, stop_when=lambda text: "42" in text), "x42yz")
    assert taken == 3 and result.predicate_steps == 3
    taken, result = run(Request((1,), 4, stop_when=lambda text: "42" in text), "abcdefg")
    assert taken == 4 and result.predicate_steps == 4  # asked on the last token of the budget too


def test_a_request_that_cannot_be_honoured_is_refused_when_made():
    """The engine generates a row's first token from its prefill: a budget under 1 (which it used to meet with one
    token anyway), a minimum past the budget, or an empty prompt is refused where the request is made."""
    import pytest

    for budget in (0, -3):
        with pytest.raises(ValueError, match=f"max_new_tokens {budget}: a request generates at least 1 token"):
            Request((1, 2), budget)
    with pytest.raises(ValueError, match="min_new_tokens 5"):
        Request((1, 2), 4, min_new_tokens=5)
    with pytest.raises(ValueError, match="at least one prompt token"):
        Request((), 4)
    assert Request((1,), 1).max_new_tokens == 1
