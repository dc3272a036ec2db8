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
