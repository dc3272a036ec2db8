"""fla's Triton kernels under the interpreter vs ccq-eval's CPU backend (cpu_ops): forward and backward,
initial and final states, packed sequences (cu_seqlens). Both sides get the same inputs; the torch side
computes in float32 (fp32 inputs), the kernels accumulate in fp32, so they agree to ~1e-5 relative."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.gated_deltanet import cpu as gdn_ops
from ccq_eval.ops.gla import cpu as gla_ops
from ccq_eval.ops import shared_cpu_forms as cpu_ops

B, T, H, D = 2, 80, 2, 16  # T > 64: more than one chunk, and a ragged last chunk
PACKED = torch.tensor([0, 37, 80, 160])  # three sequences packed into one row of 160


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return ((a.double() - b.double()).abs().max() / b.double().abs().max().clamp_min(1e-12)).item()


def run_both(fla_fn, ours_fn, inputs: dict, grad_names: tuple[str, ...], **kwargs):
    """(outputs, grads) of both functions on clones of the same inputs, a random cotangent on every output."""
    results = []
    for fn in (fla_fn, ours_fn):
        leaves = {k: (v.detach().clone().requires_grad_(k in grad_names) if isinstance(v, torch.Tensor) else v)
                  for k, v in inputs.items()}
        out = fn(**leaves, **kwargs)
        outs = [o for o in (out if isinstance(out, tuple) else (out,)) if isinstance(o, torch.Tensor)]
        torch.manual_seed(1)
        if not grad_names:
            results.append((outs, {}))
            continue
        loss = sum((o * torch.randn(o.shape, dtype=o.dtype)).sum() for o in outs)  # randn_like follows strides
        loss.backward()
        results.append((outs, {k: leaves[k].grad for k in grad_names}))
    return results


def assert_close(results, bound=2e-5):
    (fla_outs, fla_grads), (our_outs, our_grads) = results
    assert len(fla_outs) == len(our_outs)
    for a, b in zip(our_outs, fla_outs):
        assert rel(a, b) < bound, rel(a, b)
    for name in fla_grads:
        assert rel(our_grads[name], fla_grads[name]) < bound, (name, rel(our_grads[name], fla_grads[name]))


def qkv(batch=B, length=T, seed=0):
    torch.manual_seed(seed)
    q, k, v = (torch.randn(batch, length, H, D) for _ in range(3))
    return q, k, v


@pytest.mark.parametrize("packed", [False, True])
@pytest.mark.parametrize("with_state", [False, True])
def test_chunk_gla(packed, with_state):
    from fla.ops.gla import chunk_gla

    batch, length = (1, int(PACKED[-1])) if packed else (B, T)
    q, k, v = qkv(batch, length)
    g = torch.nn.functional.logsigmoid(torch.randn(batch, length, H, D)) / 8
    n = len(PACKED) - 1 if packed else batch
    inputs = {"q": q, "k": k, "v": v, "g": g,
              "initial_state": torch.randn(n, H, D, D) if with_state else None}
    kwargs = {"output_final_state": True, "cu_seqlens": PACKED if packed else None}
    assert_close(run_both(chunk_gla, gla_ops.chunk_gla, inputs, ("q", "k", "v", "g")
                          + (("initial_state",) if with_state else ()), **kwargs))


def test_fused_recurrent_gla_decoding_step():
    from fla.ops.gla import fused_recurrent_gla

    q, k, v = qkv(length=1)
    gk = torch.nn.functional.logsigmoid(torch.randn(B, 1, H, D))
    inputs = {"q": q, "k": k, "v": v, "gk": gk, "initial_state": torch.randn(B, H, D, D)}
    assert_close(run_both(fused_recurrent_gla, gla_ops.fused_recurrent_gla, inputs, ("q", "k", "v"),
                          output_final_state=True))


@pytest.mark.parametrize("packed", [False, True])
def test_chunk_gated_delta_rule(packed):
    from fla.ops.gated_delta_rule import chunk_gated_delta_rule

    batch, length = (1, int(PACKED[-1])) if packed else (B, T)
    q, k, v = qkv(batch, length)
    n = len(PACKED) - 1 if packed else batch
    inputs = {"q": q, "k": torch.nn.functional.normalize(k, dim=-1), "v": v,
              "g": torch.nn.functional.logsigmoid(torch.randn(batch, length, H)) / 4,
              "beta": torch.rand(batch, length, H).sigmoid(), "initial_state": torch.randn(n, H, D, D)}
    assert_close(run_both(chunk_gated_delta_rule, gdn_ops.chunk_gated_delta_rule, inputs,
                          ("q", "k", "v", "g", "beta", "initial_state"), output_final_state=True,
                          cu_seqlens=PACKED if packed else None))


def test_fused_recurrent_gated_delta_rule_decoding_step():
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule

    q, k, v = qkv(length=1)
    inputs = {"q": q, "k": torch.nn.functional.normalize(k, dim=-1), "v": v,
              "g": torch.nn.functional.logsigmoid(torch.randn(B, 1, H)), "beta": torch.rand(B, 1, H),
              "initial_state": torch.randn(B, H, D, D)}
    results = run_both(fused_recurrent_gated_delta_rule, gdn_ops.fused_recurrent_gated_delta_rule, inputs, (),
                       output_final_state=True)
    for a, b in zip(results[1][0], results[0][0]):  # fla's recurrent kernel has no backward: forward only
        assert rel(a, b) < 2e-5


def test_chunk_simple_gla_is_the_ccq_second_moment():
    """What CCQ's CUDA branch calls: causal linear attention with v = k, no decay, scale 1, an initial state."""
    from fla.ops.simple_gla import chunk_simple_gla

    q, k, _ = qkv()
    p0 = torch.randn(B, H, D, D)
    out, _ = chunk_simple_gla(q, k, k, scale=1.0, initial_state=p0)
    expected = torch.einsum("bhts,bshd->bthd", torch.einsum("bthd,bshd->bhts", q.double(), k.double())
                            * torch.ones(T, T, dtype=torch.float64).tril(), k.double())
    expected = expected + torch.einsum("bhde,bthd->bthe", p0.double(), q.double())
    assert rel(out, expected) < 2e-6


def test_short_convolution_norms_and_activations():
    from fla.modules.causal_conv1d.ops import causal_conv1d
    from fla.modules.mlp import swiglu
    from fla.modules.norm.fused_norm_gate import rms_norm_gated
    from fla.modules.norm.layernorm import rms_norm

    torch.manual_seed(0)
    x, w = torch.randn(B, T, 3 * D), torch.randn(3 * D, 4)
    assert_close(run_both(causal_conv1d, cpu_ops.causal_conv1d, {"x": x, "weight": w, "bias": None},
                          ("x", "weight"), activation="silu"))
    weight = torch.randn(D)
    assert_close(run_both(rms_norm, cpu_ops.rms_norm, {"x": torch.randn(B, T, D), "weight": weight, "bias": None},
                          ("x", "weight"), eps=1e-5))
    assert_close(run_both(rms_norm_gated, cpu_ops.rms_norm_gated, {"x": torch.randn(B, T, D), "g": torch.randn(B, T, D),
                                                                   "weight": weight, "bias": None}, ("x", "g", "weight")))
    assert_close(run_both(swiglu, cpu_ops.swiglu, {"x": torch.randn(B, T, D), "y": torch.randn(B, T, D)}, ("x", "y")))


# --- the other families' ops (their homes' cpu_ops.py) ------------------------------------------------------------

def test_fused_recurrent_delta_rule_with_l2_norm_in_kernel():
    from fla.ops.delta_rule import fused_recurrent_delta_rule

    from ccq_eval.ops.delta_net import cpu as delta_ops

    q, k, v = qkv()
    inputs = {"q": q, "k": k, "v": v, "beta": torch.rand(B, T, H), "initial_state": torch.randn(B, H, D, D)}
    assert_close(run_both(fused_recurrent_delta_rule, delta_ops.fused_recurrent_delta_rule, inputs, (),
                          output_final_state=True, use_qk_l2norm_in_kernel=True))


# fla's chunk_delta_rule refuses float32 (so loading refuses fp32 DeltaNet on CUDA), and in bf16 under the
# interpreter it returns values of ~1e9 from the first position on (interpreter bf16 emulation; not
# diagnosed): the chunked delta rule's kernel is left for a GPU. The backend's chunk form is the gated delta
# rule at g = 0, whose chunk kernel is compared above in fp32.


@pytest.mark.parametrize("name", ["chunk_retention", "fused_recurrent_retention"])
def test_retention(name):
    import fla.ops.retention as fla_retention

    from ccq_eval.ops.retnet import cpu as retnet_ops

    q, k, v = qkv()
    inputs = {"q": q, "k": k, "v": v, "initial_state": torch.randn(B, H, D, D)}
    grads = ("q", "k", "v") if name == "chunk_retention" else ()
    assert_close(run_both(getattr(fla_retention, name), getattr(retnet_ops, name), inputs, grads,
                          output_final_state=True))
