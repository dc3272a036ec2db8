"""lm/decoding.py on its own: the prompt key of each row without its left padding, and the per-row stop predicate
(a row stops once its predicate holds, stays stopped, and the steps are counted)."""

from __future__ import annotations

import torch

from ccq_eval.lm.decoding import DecodingHooks, PredicateStop, prompt_rows
from tests.helpers import byte_tokenizer


def test_prompt_rows_drop_each_rows_left_padding():
    context = torch.tensor([[0, 0, 5, 6], [7, 8, 9, 10]])
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert prompt_rows(context, mask) == [(5, 6), (7, 8, 9, 10)]
    assert prompt_rows(context, None) == [(0, 0, 5, 6), (7, 8, 9, 10)]


def test_a_predicate_stops_its_row_once_it_holds_and_counts_the_steps():
    tokenizer = byte_tokenizer()
    hooks = DecodingHooks()
    prompt = tokenizer("ab", add_special_tokens=False)["input_ids"]
    stop = PredicateStop(tokenizer, len(prompt), [lambda text: "42" in text, None], hooks)
    rows = lambda text: torch.tensor([prompt + tokenizer(text, add_special_tokens=False)["input_ids"]] * 2)  # noqa: E731
    assert stop(rows("4"), None).tolist() == [False, False]
    assert stop(rows("42"), None).tolist() == [True, False]  # the row without a predicate never stops
    assert stop(rows("421"), None).tolist() == [True, False]  # a stopped row stays stopped, not asked again
    assert hooks.decode_steps == 2
