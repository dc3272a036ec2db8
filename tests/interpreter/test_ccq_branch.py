"""CCQ's second moment through fla's kernel (``chunk_simple_gla``, the path a GPU would take before the
TF32 fix) under the interpreter, against the float64 definition ``naive_contract_query``; with the GPU's
default TF32 dots emulated, that path misses the fp32 bound, and the IEEE torch path, the default on every
device now, meets it."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.ccq import FP32_BOUND, contract_query, naive_contract_query, running_key_sums
from tests.interpreter.patches import count_kernel_launches, tf32_dots

B, T, H, D = 2, 150, 2, 16


def inputs(seed=0):
    torch.manual_seed(seed)
    q, k = torch.randn(B, T, H, D), torch.randn(B, T, H, D) + 0.5  # a key mean away from 0, as trained keys have
    lam = torch.rand(B, T, H)
    return q, k, lam


def rel(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


def contract_with(kernel: str, q, k, lam, sigma_scale="none"):
    import ccq_eval.ops.ccq.chunk as ccq

    original = ccq.SECOND_MOMENT
    ccq.SECOND_MOMENT = kernel
    try:
        return contract_query(q, k, lam, sigma_scale=sigma_scale)[0]
    finally:
        ccq.SECOND_MOMENT = original


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
def test_the_fla_kernel_branch_equals_the_float64_definition(sigma_scale):
    q, k, lam = inputs()
    oracle = naive_contract_query(q, k, lam, sigma_scale=sigma_scale)
    with count_kernel_launches() as launches:
        assert rel(contract_with("fla", q, k, lam, sigma_scale), oracle) < FP32_BOUND
    assert launches, "fla's chunk_simple_gla kernels ran"
    with count_kernel_launches() as launches:
        contract_query(q, k, lam, sigma_scale=sigma_scale)
    assert launches == []  # the default form is torch on every device


def test_under_tf32_dots_the_kernel_misses_the_fp32_bound_and_the_default_meets_it():
    q, k, lam = inputs()
    oracle = naive_contract_query(q, k, lam)
    with tf32_dots():
        kernel_error = rel(contract_with("fla", q, k, lam), oracle)
        default_error = rel(contract_query(q, k, lam)[0], oracle)
    assert kernel_error > FP32_BOUND, kernel_error  # the defect, reproduced: TF32 rounds to ~5e-4 per operand
    assert default_error < FP32_BOUND, default_error


def test_float64_never_reaches_the_kernel():
    q, k, lam = (x.double() for x in inputs())
    kc, s0, p0 = k - k[:, :1], torch.zeros(B, H, D, dtype=torch.float64), torch.zeros(B, H, D, D, dtype=torch.float64)
    with pytest.raises(ValueError, match="float64"):
        running_key_sums(q, kc, s0, p0, kernel="fla")
    # the default path keeps float64 statistics float64 end to end
    assert rel(contract_query(q, k, lam[..., :])[0], naive_contract_query(q, k, lam)) < 1e-12
