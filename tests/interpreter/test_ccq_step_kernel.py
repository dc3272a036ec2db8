"""CCQ's one-kernel decoding step (ops/ccq/step.py) under Triton's interpreter against the torch step
(``contract_query_step``, itself tested against the float64 definition in tests/models/test_ccq_operator.py): ten
steps from carried statistics, contracted queries and statistics within the tier's fp32 bound (a bfloat16 query within
one rounding), Sigma updated in the tensor it lies in, one launch a step."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops import trust
from ccq_eval.ops.ccq import CCQState, contract_query, contract_query_step
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.interpreter.patches import count_kernel_launches
from tests.interpreter.test_kernels import rel

B, H, D = 3, 2, 24  # D not a power of two: masked lanes


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_fused_step_equals_the_torch_step(sigma_scale, dtype, monkeypatch):
    monkeypatch.setattr(trust, "_MODE", "own")  # the kernel's own launches, without the first use's check
    torch.manual_seed(0)
    prefix = torch.randn(B, 40, H, D) * 2 + 3
    _, carried = contract_query(torch.zeros_like(prefix), prefix, torch.zeros(B, 40, H), output_final_state=True)
    torch_state = CCQState(carried.count.clone(), carried.mean.clone(), carried.cov.clone())
    kernel_state = CCQState(carried.count.clone(), carried.mean.clone(), carried.cov.clone())
    cov = kernel_state.cov
    for _ in range(10):
        q = torch.randn(B, 1, H, D).to(dtype)
        k = (torch.randn(B, 1, H, D) * 2 + 3).to(dtype)
        lam = torch.rand(B, 1, H)
        with torch.no_grad():
            expected, torch_state = contract_query_step(q, k, lam, torch_state, sigma_scale)
            with fla_kernels_on_cpu(), count_kernel_launches() as launches:
                got, kernel_state = contract_query_step(q, k, lam, kernel_state, sigma_scale)
        assert launches == ["_ccq_step_kernel"]
        assert kernel_state.cov is cov, "Sigma is updated where it lies"
        assert got.dtype == dtype and rel(got, expected) < (2 ** -7 if dtype == torch.bfloat16 else 2e-5)
        assert torch.equal(kernel_state.count, torch_state.count)
        assert rel(kernel_state.mean, torch_state.mean) < 2e-6 and rel(kernel_state.cov, torch_state.cov) < 2e-6
