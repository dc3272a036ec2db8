"""The packed prefill on fla's real kernels (interpreted), as a GPU runs it: nothing read back to the host, neither in
ccq-eval's code (CCQ's packed read, the engine) nor in fla's variable-length kernels (tests/generation/
test_prefill_host_reads.py counts the same on the CPU backend, whose per-sequence loops are CPU code)."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.models.cpu_backend import fla_kernels_on_cpu
from tests.generation.test_prefill_host_reads import prefill_reads
from tests.helpers import tiny_model
from tests.interpreter.patches import count_kernel_launches


@pytest.mark.parametrize("kind", ["ccq_gla", "ccq_gated_deltanet"])
def test_a_packed_prefill_on_fla_kernels_reads_nothing_back(kind):
    torch.manual_seed(0)
    model = tiny_model(kind, fuse_cross_entropy=False)
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        found = prefill_reads(model)
    assert launches, "fla's kernels ran"
    assert found == [], f"{len(found)} host reads, the first at:\n{found[0] if found else ''}"
