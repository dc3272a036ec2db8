"""A fixed-slot decoding step writes every layer's recurrent state, and CCQ's covariance, where it lies: a step on
the CPU (the step a CUDA graph captures, run eagerly) copies no tensor the size of either. Copies counted as the
bytes each ``aten.copy_`` writes. And the engine's tokens and scores are those of the same step run out of place."""

from __future__ import annotations

import contextlib

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ccq_eval.generation import static_rows
from ccq_eval.generation.engine import generate
from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.static_rows import StaticRows
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model

IN_PLACE = ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "hgrn2", "ccq_hgrn2", "delta_net",
            "ccq_delta_net"]


class _CopiedBytes(TorchDispatchMode):
    def __init__(self):
        super().__init__()
        self.sizes: list[int] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten.copy_.default:
            self.sizes.append(args[0].numel() * args[0].element_size())
        return func(*args, **(kwargs or {}))


def _state_sizes(rows: StaticRows) -> int:
    """The smallest of the layers' recurrent states and CCQ covariances, in bytes."""
    sizes = []
    for layer in rows.cache.layers:
        recurrent = layer.state["recurrent_state"]
        backbone, ccq = recurrent if isinstance(recurrent, tuple) else (recurrent, None)
        sizes.append(backbone.numel() * backbone.element_size())
        if ccq is not None:
            sizes.append(ccq.cov.numel() * ccq.cov.element_size())
    return min(sizes)


def step_copies(model) -> tuple[list[int], int]:
    """(the bytes of every copy in one fixed-slot step after a packed prefill of two prompts, the smallest state)."""
    with torch.no_grad():
        batch, _ = layout_for(model).prefill([(1, 2, 3, 4, 5), (6, 7)])
        rows = StaticRows(model, batch.cache, rows=2, width=2, capture=False)
        rows.step([8, 9])  # a first step apart: a lazily filled convolution window is not a step
        with _CopiedBytes() as copies:
            rows._run_eager()
    return copies.sizes, _state_sizes(rows)


@pytest.mark.parametrize("kind", IN_PLACE)
def test_a_decoding_step_copies_no_state(kind):
    torch.manual_seed(0)
    copied, state = step_copies(tiny_model(kind))
    assert all(size < state for size in copied), (copied, state)


def test_the_count_sees_a_state_copied_home():
    """Without the in-place route (the step as fla runs it) the state's copy home is what the count finds."""
    torch.manual_seed(0)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(static_rows, "states_written_in_place", lambda model: contextlib.nullcontext())
        copied, state = step_copies(tiny_model("gla"))
    assert state in copied


@pytest.mark.parametrize("kind", ["ccq_gla", "ccq_gated_deltanet"])
def test_in_place_steps_give_the_tokens_and_scores_of_the_steps_out_of_place(kind, monkeypatch):
    torch.manual_seed(0)
    model = tiny_model(kind)  # float32: the dtype the in-place steps take
    asked = requests()
    got = generate(model, TOKENIZER, asked, batch_size=3, static=True)
    monkeypatch.setattr(static_rows, "states_written_in_place", lambda model: contextlib.nullcontext())
    expected = generate(model, TOKENIZER, asked, batch_size=3, static=True)
    for result, reference in zip(got, expected):
        assert result.tokens == reference.tokens
        if reference.continuation_nll is not None:
            assert result.continuation_nll == pytest.approx(reference.continuation_nll, rel=1e-5)
