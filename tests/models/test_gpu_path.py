"""What the GPU path fixes, checked on CPU: CCQ's second moment in IEEE fp32 whatever the process's
matmul precision, the GPU's one-cumsum form of the chunk states against the loop, bf16 error against
bf16's own rounding, float64 refused where fla's kernels would compute it in float32, and attn_mode
'fused_chunk' (refused by fla 0.6 on CUDA) mapped to the 'chunk' it equals on both devices."""

from __future__ import annotations

import json

import pytest
import torch

from ccq_eval.models import ModelLoadError, load_model
from ccq_eval.ops.ccq import contract_query, naive_contract_query
from ccq_eval.ops.ccq.chunk import entering_states
from ccq_eval.ops.fp32_matmul import ieee_fp32
from tests.helpers import save_checkpoint, tiny_model


def rel(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


def test_ieee_fp32_overrides_tf32_and_restores_it():
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")  # TF32 allowed, as some libraries set it
    try:
        with ieee_fp32():
            assert torch.get_float32_matmul_precision() == "highest"
            assert torch.backends.cuda.matmul.allow_tf32 is False
        assert torch.get_float32_matmul_precision() == "high"
    finally:
        torch.set_float32_matmul_precision(saved)


def test_one_cumsum_equals_the_loop_over_chunks():
    torch.manual_seed(0)
    p0, outer = torch.randn(2, 3, 4, 4), torch.randn(2, 3, 7, 4, 4)
    loop_states, loop_final = entering_states(p0, outer, loop=True)
    sum_states, sum_final = entering_states(p0, outer, loop=False)
    assert rel(sum_states, loop_states) < 1e-6 and rel(sum_final, loop_final) < 1e-6
    for states in (loop_states, sum_states):  # the first chunk enters with the carried state alone
        assert torch.equal(states[:, :, 0], p0)
    assert rel(loop_final, p0 + outer.sum(dim=2)) < 1e-6


def test_contract_query_is_the_same_with_tf32_requested():
    torch.manual_seed(0)
    q, k, lam = torch.randn(1, 200, 2, 16), torch.randn(1, 200, 2, 16) + 1, torch.rand(1, 200, 2)
    oracle = naive_contract_query(q, k, lam)
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision("high")
    try:
        assert rel(contract_query(q, k, lam)[0], oracle) < 1e-4
    finally:
        torch.set_float32_matmul_precision(saved)


def test_bf16_error_is_within_a_few_bf16_roundings():
    """bf16 inputs: the contracted query's error against the float64 definition, in units of bf16's own
    rounding of that definition (its noise floor). Measured: 1.0 rounding (README)."""
    torch.manual_seed(0)
    q, k, lam = torch.randn(1, 512, 2, 32), torch.randn(1, 512, 2, 32) + 1, torch.rand(1, 512, 2)
    qb, kb, lamb = q.bfloat16(), k.bfloat16(), lam.bfloat16()
    oracle = naive_contract_query(qb.double(), kb.double(), lamb.double())
    noise = (oracle.bfloat16().double() - oracle).abs().max().item()
    error = (contract_query(qb, kb, lamb)[0].double() - oracle).abs().max().item()
    assert error <= 2 * noise, (error, noise)


@pytest.fixture(scope="module")
def gla_dir(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("gla"), tmp_path_factory.mktemp("m") / "gla")


@pytest.mark.parametrize("device", ["cuda", "cuda:0"])
def test_float64_on_cuda_is_refused_before_anything_loads(gla_dir, device):
    with pytest.raises(ModelLoadError, match="fla's CUDA kernels compute in float32"):
        load_model(str(gla_dir), device=device, dtype="float64")


def test_fused_chunk_is_mapped_to_chunk_and_recorded(gla_dir, tmp_path):
    import shutil

    fused = tmp_path / "fused"
    shutil.copytree(gla_dir, fused)
    config = json.loads((fused / "config.json").read_text())
    (fused / "config.json").write_text(json.dumps({**config, "attn_mode": "fused_chunk"}))
    model, _, provenance = load_model(str(fused), device="cpu")
    reference, _, _ = load_model(str(gla_dir), device="cpu")
    assert provenance["config_mapped"] == {"attn_mode": "fused_chunk -> chunk"}
    assert all(layer.attn.mode == "chunk" for layer in model.model.layers)
    ids = torch.randint(0, 256, (1, 90))
    with torch.no_grad():
        assert torch.equal(model(ids).logits, reference(ids).logits)
