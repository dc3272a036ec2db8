"""Packed prefills padded to fixed totals (generation/packing.py): the ladder's promises (a multiple of 16, padded by at
most a quarter above 2,048 tokens, every norm bucket a run can meet compiled by the warm-up), and a padding sequence
that changes no real token's logit or cache row, on every packed family."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.generation import layouts
from ccq_eval.generation.cache_rows import cache_leaves
from ccq_eval.generation.packing import BUCKET, padded_total, warmup_totals
from tests.generation.test_engine import LAYOUT, assert_fixed_slots_equal_the_reference
from tests.helpers import tiny_model

PACKED = [kind for kind, layout in LAYOUT.items() if layout == "packed"]


def bucket(total: int) -> int:
    return -(-total // BUCKET)  # fla's layer norm: cdiv(T, 2048)


def test_a_padded_total_is_a_multiple_of_16_and_never_a_quarter_more():
    for total in [1, 15, 16, 17, 64, 65, 127, 128, 1000, 2047, 2048, 2049, 4097, 10_000, 65_537, 300_000, 524_288]:
        padded = padded_total(total)
        assert padded >= max(total, 128) and padded % 16 == 0, total
        assert padded_total(padded) == padded  # a rung pads to itself
        if total > BUCKET:
            assert padded <= 1.25 * total, total


@pytest.mark.parametrize("most", [100, 2048, 2049, 8 * 1024, 64 * 8192, 37 * 3000])
def test_the_warm_up_totals_meet_every_bucket_a_run_can_meet(most):
    warm = warmup_totals(most)
    assert warm == sorted(warm) and len(set(warm)) == len(warm)
    met = {bucket(padded_total(total)) for total in range(1, most + 1, 7)} | {bucket(padded_total(most))}
    assert met == {bucket(total) for total in warm}
    assert all(total % 16 == 0 and padded_total(total) == total for total in warm)


def test_a_run_of_64_rows_at_8k_compiles_28_totals():
    assert len(warmup_totals(64 * 8192)) == 28


@pytest.mark.parametrize("kind", PACKED)
def test_the_padding_changes_no_logit_and_no_cache_row(kind):
    torch.manual_seed(0)
    model = tiny_model(kind).double()
    prompts = [tuple(torch.randint(0, 256, (n,)).tolist()) for n in (37, 5, 61)]  # 103 tokens, padded to 128
    plain, plain_logits = layouts.Independent(model, packed=True).prefill(prompts)
    padded, padded_logits = layouts.Independent(model, packed=True, pad=True).prefill(prompts)
    assert padded_logits.shape == plain_logits.shape
    assert torch.allclose(padded_logits, plain_logits, rtol=0, atol=1e-12)
    for a, b in zip(cache_leaves(padded.cache), cache_leaves(plain.cache), strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, rtol=0, atol=1e-12)


@pytest.mark.parametrize("kind", ["gla", "ccq_gated_deltanet"])
def test_padded_prefills_in_fixed_slots_equal_the_reference(kind, monkeypatch):
    monkeypatch.setattr(layouts, "pads", lambda model: True)
    assert_fixed_slots_equal_the_reference(kind)
