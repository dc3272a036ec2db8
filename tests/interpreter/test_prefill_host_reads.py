"""The packed prefill on fla's real kernels (interpreted), as a GPU runs it: nothing read back to the host, neither in
ccq-eval's code (CCQ's packed read, the engine) nor in fla's variable-length kernels (tests/generation/
test_prefill_host_reads.py counts the same on the CPU backend, whose per-sequence loops are CPU code)."""

from __future__ import annotations

import pytest

from tests.generation.test_prefill_host_reads import prefill_reads
from tests.interpreter.test_host_reads import assert_no_host_reads_on_fla_kernels


@pytest.mark.parametrize("kind", ["ccq_gla", "ccq_gated_deltanet"])
def test_a_packed_prefill_on_fla_kernels_reads_nothing_back(kind):
    assert_no_host_reads_on_fla_kernels(kind, prefill_reads)
