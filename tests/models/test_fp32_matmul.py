"""3xTF32 (fp32_matmul.MODE = "3xtf32"): fp32 precision from TF32 tensor-core passes, checked on the CPU with a GPU's TF32 matmul emulated
(operands rounded to TF32's 10 mantissa bits, products accumulated in fp32, as tensor cores do). One TF32 pass
misses CCQ's fp32 bound against the float64 definition; the three-pass split meets it."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops import fp32_matmul
from ccq_eval.ops.ccq import FP32_BOUND, contract_query, naive_contract_query
from ccq_eval.ops.fp32_matmul import ieee_fp32, round_to_tf32, split_tf32


def emulated_tf32_matmul(a, b):
    with ieee_fp32():
        return round_to_tf32(a.contiguous()) @ round_to_tf32(b.contiguous())


def rel(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


@pytest.fixture
def gpu_arithmetic(monkeypatch):
    """The GPU's default: 3xTF32, each pass a TF32 tensor-core matmul (emulated)."""
    monkeypatch.setattr(fp32_matmul, "MODE", "3xtf32")
    monkeypatch.setattr(fp32_matmul, "tf32_matmul", emulated_tf32_matmul)


def test_the_split_is_exact_and_its_high_part_is_tf32():
    torch.manual_seed(0)
    x = torch.randn(1000) * torch.logspace(-20, 20, 1000)
    hi, lo = split_tf32(x)
    assert torch.equal(hi + lo, x)
    assert torch.equal(hi.view(torch.int32) & 0x1FFF, torch.zeros(1000, dtype=torch.int32))  # 10 mantissa bits
    assert ((hi - x).abs() <= x.abs() * 2.0 ** -11).all()  # rounded to nearest: half a TF32 step at most
    assert torch.equal(round_to_tf32(hi), hi)


def test_three_passes_recover_fp32_precision_where_one_pass_loses_it(gpu_arithmetic):
    torch.manual_seed(0)
    a, b = torch.randn(8, 64, 256), torch.randn(8, 256, 64)
    exact = a.double() @ b.double()
    one_pass = rel(emulated_tf32_matmul(a, b), exact)
    three_pass = rel(fp32_matmul.matmul(a, b), exact)
    assert one_pass > 1e-4, one_pass
    assert three_pass < 2e-6, three_pass
    mask = torch.ones(64, 64).tril()  # exact in TF32: two passes suffice
    c = torch.randn(64, 32)
    assert rel(fp32_matmul.matmul(mask, c, exact_left=True), mask.double() @ c.double()) < 2e-6


def ccq_inputs():
    torch.manual_seed(0)
    return torch.randn(2, 300, 2, 64), torch.randn(2, 300, 2, 64) + 0.5, torch.rand(2, 300, 2)


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
def test_ccq_through_tf32_passes_meets_the_fp32_bound_with_the_split(gpu_arithmetic, sigma_scale):
    q, k, lam = ccq_inputs()
    oracle = naive_contract_query(q, k, lam, sigma_scale=sigma_scale)
    assert rel(contract_query(q, k, lam, sigma_scale=sigma_scale)[0], oracle) < FP32_BOUND


def test_ccq_through_one_tf32_pass_misses_the_fp32_bound(monkeypatch):
    q, k, lam = ccq_inputs()
    oracle = naive_contract_query(q, k, lam)
    monkeypatch.setattr(fp32_matmul, "matmul", lambda a, b, exact_left=False: emulated_tf32_matmul(a, b))
    error = rel(contract_query(q, k, lam)[0], oracle)
    assert error > FP32_BOUND, error  # the defect the split removes


def test_ieee_is_the_default_and_a_wrong_mode_is_named(monkeypatch):
    assert fp32_matmul.mode() == "ieee"
    a, b = torch.randn(16, 32), torch.randn(32, 8)
    with ieee_fp32():
        assert torch.equal(fp32_matmul.matmul(a, b), a @ b)
    monkeypatch.setattr(fp32_matmul, "MODE", "tf32")
    with pytest.raises(ValueError, match="MODE"):
        fp32_matmul.matmul(a, b)


def test_other_dtypes_pass_through_unsplit(gpu_arithmetic):
    a, b = torch.randn(4, 8, dtype=torch.float64), torch.randn(8, 3, dtype=torch.float64)
    assert torch.equal(fp32_matmul.matmul(a, b), a @ b)


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
def test_a_bfloat16_model_takes_one_tf32_pass_within_its_own_rounding(monkeypatch, sigma_scale):
    """A bfloat16 model's read: one TF32 pass per matmul (emulated), the contracted query within BF16_BOUND of the
    float64 definition on the same bfloat16 inputs, per token; a float32 model's read never takes that pass."""
    from ccq_eval.ops.ccq import BF16_BOUND

    passes = []
    monkeypatch.setattr(fp32_matmul, "tf32_matmul", lambda a, b: (passes.append(1), emulated_tf32_matmul(a, b))[1])
    monkeypatch.setattr(fp32_matmul, "tf32_matmul_add_",
                        lambda out, a, b: (passes.append(1), out.add_(emulated_tf32_matmul(a, b)))[1])
    q, k, lam = (x.bfloat16() for x in ccq_inputs())
    k = (k.float() * 2 + 5).bfloat16()  # keys with a large mean: the centring must hold under TF32 too
    oracle = naive_contract_query(q, k, lam, sigma_scale=sigma_scale)
    out, _ = contract_query(q, k, lam, sigma_scale=sigma_scale)
    assert passes and out.dtype == torch.bfloat16
    error = ((out.double() - oracle).norm(dim=-1) / oracle.norm(dim=-1)).max().item()
    assert error < BF16_BOUND, error
    passes.clear()
    contract_query(q.float(), k.float(), lam, sigma_scale=sigma_scale)
    assert not passes
