"""The packed prefill on fla's real kernels (interpreted): no host read in ccq-eval's code (the model's CCQ read, the
engine). fla's own are its chunk-index preparation for ``cu_seqlens`` (``fla/ops/utils/index.py``, cached per
``cu_seqlens`` tensor, so once per prefill and chunk size, not once per layer): named here, so a new one is seen."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.models.cpu_backend import fla_kernels_on_cpu
from tests.generation.test_prefill_host_reads import prefill_reads
from tests.helpers import tiny_model
from tests.interpreter.patches import count_kernel_launches


def innermost_frame(stack: str) -> str:
    return [line.strip() for line in stack.splitlines() if line.strip().startswith('File "')][-1]


@pytest.mark.parametrize("kind", ["ccq_gla", "ccq_gated_deltanet"])
def test_a_packed_prefill_on_fla_kernels_reads_back_only_in_fla_chunk_indices(kind):
    torch.manual_seed(0)
    model = tiny_model(kind, fuse_cross_entropy=False)
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        found = prefill_reads(model)
    assert launches, "fla's kernels ran"
    places = {innermost_frame(stack) for stack in found}
    assert all("ccq_eval" not in place for place in places), places
    assert all("fla/ops/utils/index.py" in place or "fla/utils" in place for place in places), places
