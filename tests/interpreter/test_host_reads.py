"""The decoding step's host reads on fla's real kernels (interpreted): none, for the paper's four recurrent families
(tests/generation/test_host_reads.py counts the same on the CPU backend, for every family in fixed slots)."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.generation.test_host_reads import decoding_step_reads
from tests.helpers import tiny_model
from tests.interpreter.patches import count_kernel_launches


def assert_no_host_reads_on_fla_kernels(kind: str, reads) -> None:
    """``reads(model)`` (the host reads of some engine work) on a tiny ``kind`` model with fla's kernels
    interpreted: the kernels ran, and nothing was read back."""
    torch.manual_seed(0)
    model = tiny_model(kind, fuse_cross_entropy=False)
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        found = reads(model)
    assert launches, "fla's kernels ran"
    assert found == [], f"{len(found)} host reads, the first at:\n{found[0] if found else ''}"


@pytest.mark.parametrize("kind", ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet"])
def test_a_decoding_step_on_fla_kernels_reads_nothing_back_to_the_host(kind):
    assert_no_host_reads_on_fla_kernels(kind, decoding_step_reads)
