"""Whole tiny models with fla's real kernels (interpreted) against the same models on ccq-eval's CPU
backend: prefill logits, and cached decoding against the full forward, for every family of the zoo."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.helpers import tiny_model
from tests.interpreter.patches import count_kernel_launches

FAMILIES = ["gla", "gated_deltanet", "ccq_gla", "ccq_gated_deltanet", "transformer",
            # the other fla families whose layers call fla kernels (DeltaNet is below: fla refuses its fp32)
            "retnet", "hgrn2", "ccq_retnet", "ccq_hgrn2", "gdn_hybrid", "mamba2", "samba"]


def rel(a, b):
    return ((a.double() - b.double()).abs().max() / b.double().abs().max()).item()


def decode(model, ids: torch.Tensor, prefix: int) -> torch.Tensor:
    """Logits of positions prefix-1 .. end, from a prefill of `prefix` tokens then one token at a time."""
    with torch.no_grad():
        out = model(ids[:, :prefix], use_cache=True)
        logits, cache = [out.logits[:, -1]], out.past_key_values
        for t in range(prefix, ids.shape[1]):
            out = model(ids[:, t: t + 1], past_key_values=cache, use_cache=True)
            logits.append(out.logits[:, -1])
            cache = out.past_key_values
    return torch.stack(logits, dim=1)


@pytest.mark.parametrize("family", FAMILIES)
def test_fla_kernels_equal_the_cpu_backend(family):
    torch.manual_seed(0)
    overrides = {"ccq_fixed_lambda": 0.5} if family.startswith("ccq") else {}
    model = tiny_model(family, fuse_cross_entropy=False, **overrides)
    ids = torch.randint(0, 256, (2, 70))
    with torch.no_grad(), count_kernel_launches() as launches:
        backend = model(ids).logits
        assert launches == []  # the CPU backend launches no Triton kernel
        with fla_kernels_on_cpu():
            kernels = model(ids).logits
    assert len(launches) >= 2 * 2, launches  # fla's kernels ran: at least two per layer (norms, the layer's op)
    assert rel(kernels, backend) < 1e-4, rel(kernels, backend)
    with fla_kernels_on_cpu():
        stepped = decode(model, ids, 64)
    assert rel(stepped, kernels[:, 63:]) < 1e-4, rel(stepped, kernels[:, 63:])
