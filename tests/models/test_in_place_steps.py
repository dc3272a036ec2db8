"""The decoding steps that write the state where it lies (ops/in_place.py, family_models/*/decode_step.py)
against the CPU backend's fused-recurrent reads (themselves tested against fla's kernels and per-token recurrences):
the same output and new state, the state returned as the very tensor passed in, and every call the step does not
take passed on to fla's function. The Triton kernels behind them: tests/interpreter/test_in_place_kernels.py."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.gated_deltanet import cpu as gdn_ops
from ccq_eval.ops.gated_deltanet.fused_recurrent import fused_recurrent_gated_delta_rule_in_place
from ccq_eval.ops.gla import cpu as gla_ops
from ccq_eval.ops.gla.fused_recurrent import fused_recurrent_gla_in_place

B, H, K, V = 3, 2, 16, 24


def gla_inputs(dtype=torch.float32, seed=0):
    torch.manual_seed(seed)
    q, k = (torch.randn(B, 1, H, K).to(dtype) for _ in range(2))
    v = torch.randn(B, 1, H, V).to(dtype)
    gk = torch.nn.functional.logsigmoid(torch.randn(B, 1, H, K)).to(dtype)
    state = torch.randn(B, H, V, K)
    return dict(q=q, k=k, v=v, gk=gk, initial_state=state, output_final_state=True, state_v_first=True)


def gdn_inputs(heads_v=H, dtype=torch.float32, seed=0, **options):
    torch.manual_seed(seed)
    q, k = (torch.randn(B, 1, H, K).to(dtype) for _ in range(2))
    v = torch.randn(B, 1, heads_v, V).to(dtype)
    gated = options.get("use_gate_in_kernel")
    g = torch.randn(B, 1, heads_v) if gated else torch.nn.functional.logsigmoid(torch.randn(B, 1, heads_v))
    beta = torch.randn(B, 1, heads_v) if options.get("use_beta_sigmoid_in_kernel") else torch.rand(B, 1, heads_v)
    extra = dict(A_log=torch.randn(heads_v), dt_bias=torch.randn(heads_v)) if gated else {}
    if not options.get("use_qk_l2norm_in_kernel"):
        q, k = (torch.nn.functional.normalize(x.float(), dim=-1).to(dtype) for x in (q, k))
    return dict(q=q, k=k, v=v, g=g, beta=beta, initial_state=torch.randn(B, heads_v, V, K), output_final_state=True,
                state_v_first=True, **extra, **options)


def in_place_equals_reference(step, reference, inputs, bound):
    state = inputs["initial_state"]
    expected_o, expected_state = reference(**{**inputs, "initial_state": state.clone()})
    with torch.no_grad():
        o, returned = step(**inputs)
    assert returned is state, "the new state is the tensor passed in"
    assert o.dtype == inputs["v"].dtype and o.shape == expected_o.shape
    torch.testing.assert_close(state, expected_state, rtol=bound, atol=bound)
    torch.testing.assert_close(o.float(), expected_o.float(), rtol=bound, atol=bound)


@pytest.mark.parametrize("dtype,bound", [(torch.float32, 2e-6), (torch.bfloat16, 2e-2)])
def test_gla_step_in_place_equals_the_backend(dtype, bound):
    in_place_equals_reference(fused_recurrent_gla_in_place, gla_ops.fused_recurrent_gla, gla_inputs(dtype), bound)


GDN_OPTIONS = [
    {},
    dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True),
    dict(use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, use_beta_sigmoid_in_kernel=True,
         allow_neg_eigval=True),
]


@pytest.mark.parametrize("options", GDN_OPTIONS, ids=["plain", "fla-layer", "negative-eigenvalues"])
@pytest.mark.parametrize("heads_v", [H, 2 * H], ids=["heads", "grouped-values"])
def test_gdn_step_in_place_equals_the_backend(options, heads_v):
    in_place_equals_reference(fused_recurrent_gated_delta_rule_in_place, gdn_ops.fused_recurrent_gated_delta_rule,
                              gdn_inputs(heads_v, **options), 2e-6)


@pytest.mark.parametrize("change", ["two tokens", "packed", "no state", "no final state", "gradients", "K-first",
                                    "float64", "reverse"])
def test_a_call_the_step_does_not_take_is_left_to_fla(change):
    inputs = gla_inputs()
    if change == "two tokens":
        inputs.update({name: torch.cat([inputs[name]] * 2, dim=1) for name in ("q", "k", "v", "gk")})
    elif change == "packed":
        inputs["cu_seqlens"] = torch.arange(B + 1)
    elif change == "no state":
        inputs["initial_state"] = None
    elif change == "no final state":
        inputs["output_final_state"] = False
    elif change == "K-first":
        inputs["state_v_first"] = False
    elif change == "float64":
        inputs.update({name: inputs[name].double() for name in ("q", "k", "v", "gk")})
    elif change == "reverse":
        inputs["reverse"] = True
    with torch.set_grad_enabled(change == "gradients"):
        assert fused_recurrent_gla_in_place(**inputs) is None


def test_the_route_is_in_place_only_inside_the_block():
    """Outside ``states_written_in_place`` fla's name is fla's (a caller keeping its old state never sees it move)."""
    import fla.layers.gla as gla_layer

    from ccq_eval.ops.in_place import states_written_in_place
    from tests.helpers import tiny_model

    model = tiny_model("gla")
    before = gla_layer.fused_recurrent_gla
    inputs = gla_inputs()
    kept = inputs["initial_state"].clone()
    with torch.no_grad():
        gla_layer.fused_recurrent_gla(**inputs)
        assert torch.equal(inputs["initial_state"], kept)
        with states_written_in_place(model):
            assert gla_layer.fused_recurrent_gla is not before
            _, returned = gla_layer.fused_recurrent_gla(**inputs)
    assert returned is inputs["initial_state"] and not torch.equal(returned, kept)
    assert gla_layer.fused_recurrent_gla is before


@pytest.mark.parametrize("l2", [False, True])
def test_delta_net_step_in_place_on_its_k_first_state_equals_the_backend(l2):
    from ccq_eval.ops.delta_net import cpu as delta_ops
    from ccq_eval.ops.delta_net.fused_recurrent import fused_recurrent_delta_rule_in_place

    inputs = delta_inputs(l2)
    in_place_equals_reference(fused_recurrent_delta_rule_in_place, delta_ops.fused_recurrent_delta_rule, inputs, 2e-6)


def delta_inputs(l2: bool, seed: int = 0) -> dict:
    inputs = gdn_inputs(seed=seed, use_qk_l2norm_in_kernel=l2)
    state = torch.randn(B, H, K, V)  # K-first
    return dict(q=inputs["q"], k=inputs["k"], v=inputs["v"], beta=inputs["beta"], initial_state=state,
                output_final_state=True, use_qk_l2norm_in_kernel=l2)
