"""No host read in ccq-eval's part of a prefill: the engine's packed (or separate) prefill of the paper's five
families reads nothing back to the host from the model's code, CCQ's read or the engine. What reads remain are the CPU
backend's per-sequence loops (``cpu_ops.over_sequences``, ``cpu_ops.causal_conv1d``: torch code for the CPU, where
the host is the device; on CUDA fla's kernels run in their place). fla's own kernels are counted in the interpreter
tier (tests/interpreter/test_prefill_host_reads.py)."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.generation.layouts import layout_for
from tests.helpers import tiny_model
from tests.host_reads import host_reads

PAPER_FAMILIES = ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "mamba2"]
CPU_BACKEND_LOOPS = ("in over_sequences", "in causal_conv1d")


def innermost_ccq_eval_frame(stack: str) -> str | None:
    frames = [line.strip() for line in stack.splitlines() if line.strip().startswith('File "') and "ccq_eval" in line]
    return frames[-1] if frames else None


def prefill_reads(model) -> list[str]:
    """The host reads of a packed prefill of three prompts, after one like it: the first apart, as an own kernel's
    first-use check (ops/trust.py) reads its verdict back once a process (the run's warm-up meets it)."""
    prompts = [(1, 2, 3, 4, 5), (6, 7), (8, 9, 10, 11)]
    with torch.no_grad():
        layout_for(model).prefill(prompts)
        with host_reads() as found:
            layout_for(model).prefill(prompts)
    return found


@pytest.mark.parametrize("kind", PAPER_FAMILIES)
def test_a_prefill_reads_nothing_back_outside_the_cpu_backends_loops(kind):
    torch.manual_seed(0)
    found = prefill_reads(tiny_model(kind))
    elsewhere = [s for s in found if not (innermost_ccq_eval_frame(s) or "").endswith(CPU_BACKEND_LOOPS)]
    assert elsewhere == [], f"{len(elsewhere)} host reads, the first at:\n{elsewhere[0] if elsewhere else ''}"
