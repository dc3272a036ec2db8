"""No host read inside a decoding step: the engine's step over fixed slots (``StaticRows._run_eager``, what a CUDA graph
captures) reads nothing back to the host on any family whose rows it keeps in fixed slots. A read there would stall
the GPU every step and break the capture. Counted on the CPU backend here; on fla's own kernels in the interpreter
tier (tests/interpreter/test_host_reads.py)."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.static_rows import StaticRows
from tests.generation.test_engine import INDEPENDENT
from tests.helpers import tiny_model
from tests.host_reads import host_reads


def test_the_counter_sees_every_kind_of_host_read():
    t = torch.arange(3)
    with host_reads() as found:
        t.sum().item()
        bool(t[0])
        t.tolist()
    assert len(found) == 3


def decoding_step_reads(model) -> list[str]:
    """The host reads of one fixed-slot decoding step after a packed (or separate) prefill of two prompts."""
    with torch.no_grad():
        layout = layout_for(model)
        batch, _ = layout.prefill([(1, 2, 3, 4, 5), (6, 7)])
        rows = StaticRows(model, batch.cache, rows=2, width=2, capture=False)
        rows.step([8, 9])  # the first step apart: lazy set-up (a conv state's first fill) is not a step
        with host_reads() as found:
            rows._run_eager()
    return found


@pytest.mark.parametrize("kind", INDEPENDENT)
def test_a_decoding_step_reads_nothing_back_to_the_host(kind):
    torch.manual_seed(0)
    found = decoding_step_reads(tiny_model(kind))
    assert found == [], f"{len(found)} host reads, the first at:\n{found[0] if found else ''}"
