"""The generation engine on fla's real kernels (interpreted): the packed prefill runs fla's variable-length kernels
(``cu_seqlens``), and batch 3 over five requests gives the batch-1 reference's tokens (a full forward per token
through the same kernels); a sample may part only at a tie of the reference's logits, and is named."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from ccq_eval.generation.agreement import partings
from ccq_eval.generation.engine import generate
from ccq_eval.generation.layouts import layout_name
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model
from tests.interpreter.patches import count_kernel_launches

# the packed layout's two kernel families (GLA about 20 s interpreted, CCQ-GDN about 2 minutes); the other layouts call no variable-length
# kernel and are compared on the CPU backend (tests/generation/test_engine.py)
FAMILIES = {"gla": "packed", "ccq_gated_deltanet": "packed"}


@pytest.mark.parametrize("family", list(FAMILIES))
def test_batch_three_on_fla_kernels_equals_batch_one(family, monkeypatch):
    torch.manual_seed(0)
    overrides = {"ccq_fixed_lambda": 0.5} if family.startswith("ccq") else {}
    model = tiny_model(family, fuse_cross_entropy=False, **overrides)
    assert layout_name(model) == FAMILIES[family]
    packed = []
    forward = model.forward
    monkeypatch.setattr(model, "forward", lambda ids, **k: packed.append(k.get("cu_seqlens") is not None)
                        or forward(ids, **k))
    # budgets capped at 5 tokens: rows still finish at different steps and join the running batch, and the batch-1
    # reference (a full interpreted forward per token) stays within minutes
    asked = [replace(r, max_new_tokens=min(r.max_new_tokens, 5)) for r in requests()]
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        got = generate(model, TOKENIZER, asked, batch_size=3)
        parted = partings(model, TOKENIZER, asked, got)
    assert launches, "fla's kernels ran"
    assert any(packed) == (FAMILIES[family] == "packed")
    assert all(p.tie for p in parted), parted  # named: request, token position, margin
    assert len(parted) <= 1, parted


def test_fixed_slots_on_fla_kernels_equal_batch_one():
    """The slots a CUDA graph replays (the cache in fixed buffers, CCQ's Sigma updated in place, a finished slot
    refilled by copy), stepped through fla's recurrent kernels."""
    torch.manual_seed(0)
    model = tiny_model("ccq_gated_deltanet", fuse_cross_entropy=False, ccq_fixed_lambda=0.5)
    asked = [replace(r, score=()) for r in requests()[2:]]  # three through two slots: a refill
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        got = generate(model, TOKENIZER, asked, batch_size=2, static=True)
        parted = partings(model, TOKENIZER, asked, got)
    assert launches, "fla's kernels ran"
    assert all(p.tie for p in parted) and len(parted) <= 1, parted
