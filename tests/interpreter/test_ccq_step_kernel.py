"""CCQ's one-kernel decoding step (ops/ccq/step.py) under Triton's interpreter against the torch step
(``contract_query_step``, itself tested against the float64 definition in tests/models/test_ccq_operator.py): ten
steps from carried statistics, contracted queries and statistics within the tier's fp32 bound (a bfloat16 query within
one rounding), Sigma updated in the tensor it lies in, one launch a step; and the layer's whole step (the gate, Gated
DeltaNet's L2 norms and the count folded in) against the same composed in torch."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops import trust
from ccq_eval.ops.ccq import CCQState, contract_query, contract_query_step
from ccq_eval.ops.ccq.state import ReadGate
from ccq_eval.ops.ccq.step import contract_read_step, reference_read_step
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.interpreter.patches import count_kernel_launches
from tests.interpreter.test_kernels import rel

B, H, D = 3, 2, 24  # D not a power of two: masked lanes


def two_carried(scale: float, shift: float) -> tuple[CCQState, CCQState]:
    """Two copies of the statistics of 40 keys (randn * scale + shift), one for each form to carry on."""
    prefix = torch.randn(B, 40, H, D) * scale + shift
    _, carried = contract_query(torch.zeros_like(prefix), prefix, torch.zeros(B, 40, H), output_final_state=True)
    return tuple(CCQState(carried.count.clone(), carried.mean.clone(), carried.cov.clone()) for _ in range(2))


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_fused_step_equals_the_torch_step(sigma_scale, dtype, monkeypatch):
    monkeypatch.setattr(trust, "_MODE", "own")  # the kernel's own launches, without the first use's check
    torch.manual_seed(0)
    torch_state, kernel_state = two_carried(scale=2, shift=3)
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


GATES = {"gate": lambda: ReadGate(torch.randn(H, D) * 0.3, torch.randn(H)), "fixed": lambda: ReadGate(fixed=0.4)}


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("gate", sorted(GATES))
@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_layers_whole_step_is_one_launch_equal_to_its_torch_form(normalize, gate, dtype, sigma_scale, monkeypatch):
    """From the layer's raw q and k: Gated DeltaNet's L2 norms, the gate and the count in the one launch, equal to
    the norms, the gate and the torch step composed (reference_read_step); the normalised k handed to the read."""
    monkeypatch.setattr(trust, "_MODE", "own")
    torch.manual_seed(1)
    read_gate = GATES[gate]()
    torch_state, kernel_state = two_carried(scale=0.1, shift=0.2)
    cov = kernel_state.cov
    for _ in range(6):
        q = (torch.randn(B, 1, H, D) * 3).to(dtype)
        k = (torch.randn(B, 1, H, D) * 3 + (0 if normalize else 1)).to(dtype)
        with torch.no_grad():
            expected, expected_k, torch_state = reference_read_step(q, k, read_gate, torch_state, sigma_scale,
                                                                    normalize, dtype)
            with fla_kernels_on_cpu(), count_kernel_launches() as launches:
                got, got_k, kernel_state = contract_read_step(q, k, read_gate, kernel_state, sigma_scale, normalize,
                                                              dtype)
        assert launches == ["_ccq_step_kernel"]
        assert kernel_state.cov is cov and got.dtype == dtype and got_k.dtype == dtype
        bound = 2 ** -7 if dtype == torch.bfloat16 else 2e-5
        assert rel(got, expected) < bound and rel(got_k, expected_k) < bound
        assert (got_k is k) != normalize  # the raw k goes on to the read unless it was normalised
        assert torch.equal(kernel_state.count, torch_state.count)
        assert rel(kernel_state.mean, torch_state.mean) < 1e-4 and rel(kernel_state.cov, torch_state.cov) < 1e-4


def device_checks(kernel: str) -> list[tuple]:
    """What `ccq-eval env` and benchmarks/gpu_check.py find for ``kernel`` at the 1.3B heads, in bfloat16, family by
    family: (family, verdict, largest difference from its reference, written in place)."""
    from ccq_eval.ops import checks
    from tests.test_gpu_benchmark import gpu_check

    found = []
    with fla_kernels_on_cpu():
        for call in checks.calls(2, torch.bfloat16, "cpu"):
            if call.kernel == kernel:
                verdict = checks.check(call)
                found.append((call.family, verdict, *gpu_check()._own_against_reference(call)))
    return found


def test_the_device_checks_cover_the_layers_whole_step():
    """`ccq-eval env` and benchmarks/gpu_check.py check CCQ's step as the models call it (GLA: the gate; Gated
    DeltaNet: the gate and the L2 norms) against its torch form, at the 1.3B heads: trusted, in place, within
    tolerance."""
    found = device_checks("CCQ step")
    assert [family for family, *_ in found] == ["ccq_gla", "ccq_gated_deltanet"]
    for _, verdict, difference, in_place in found:
        assert verdict.path == "own" and in_place and difference < trust.TOLERANCE[torch.bfloat16], verdict
