"""lm/decoding.py on its own: the prompt key of each row without its left padding (the stop rules the hooks feed are
tested with the engine, tests/generation/)."""

from __future__ import annotations

import torch

from ccq_eval.lm.decoding import prompt_rows


def test_prompt_rows_drop_each_rows_left_padding():
    context = torch.tensor([[0, 0, 5, 6], [7, 8, 9, 10]])
    mask = torch.tensor([[0, 0, 1, 1], [1, 1, 1, 1]])
    assert prompt_rows(context, mask) == [(5, 6), (7, 8, 9, 10)]
    assert prompt_rows(context, None) == [(0, 0, 5, 6), (7, 8, 9, 10)]
