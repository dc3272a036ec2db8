"""ccq-eval's in-place decoding kernels (ops/gla/fused_recurrent.py, gated_deltanet/decode_step.py) under
Triton's interpreter, against fla's own fused-recurrent kernels (interpreted) and the torch in-place step: the same
output and state within the tier's fp32 bound, the state written into the tensor passed in, and the kernel really
launched."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.ops.gated_deltanet.fused_recurrent import fused_recurrent_gated_delta_rule_in_place
from ccq_eval.ops.gla.fused_recurrent import fused_recurrent_gla_in_place
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.interpreter.patches import count_kernel_launches
from tests.interpreter.test_kernels import rel
from tests.models.test_in_place_steps import GDN_OPTIONS, gdn_inputs, gla_inputs

BOUND = 2e-5


def _three_ways(step, fla_fn, inputs):
    """(fla's (o, state), the kernel's (o, state), the torch step's (o, state)); the kernel's launches."""
    with torch.no_grad():
        expected = fla_fn(**{**inputs, "initial_state": inputs["initial_state"].clone()})
        torch_inputs = {**inputs, "initial_state": inputs["initial_state"].clone()}
        by_torch = step(**torch_inputs)
        state = inputs["initial_state"].clone()
        with fla_kernels_on_cpu(), count_kernel_launches() as launches:
            by_kernel = step(**{**inputs, "initial_state": state})
    assert by_kernel[1] is state
    return expected, by_kernel, by_torch, launches


def _close(expected, *others):
    """The states (float32) within BOUND; the outputs within BOUND, or one bfloat16 rounding for a bfloat16 output."""
    for got in others:
        for a, b in zip(got, expected):
            bound = 2 ** -7 if a.dtype == torch.bfloat16 else BOUND
            assert rel(a, b) < bound, rel(a, b)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_gla_kernel_in_place_equals_fla_and_the_torch_step(dtype):
    from fla.ops.gla import fused_recurrent_gla

    expected, kernel, by_torch, launches = _three_ways(fused_recurrent_gla_in_place, fused_recurrent_gla,
                                                        gla_inputs(dtype))
    assert launches == ["_gla_step_kernel"]
    _close(expected, kernel, by_torch)


@pytest.mark.parametrize("options", GDN_OPTIONS, ids=["plain", "fla-layer", "negative-eigenvalues"])
@pytest.mark.parametrize("heads_v", [2, 4], ids=["heads", "grouped-values"])
def test_gdn_kernel_in_place_equals_fla_and_the_torch_step(options, heads_v):
    from fla.ops.gated_delta_rule import fused_recurrent_gated_delta_rule

    expected, kernel, by_torch, launches = _three_ways(fused_recurrent_gated_delta_rule_in_place,
                                                        fused_recurrent_gated_delta_rule, gdn_inputs(heads_v, **options))
    assert launches == ["_gdn_step_kernel"]
    _close(expected, kernel, by_torch)


@pytest.mark.parametrize("l2", [False, True])
def test_delta_net_kernel_in_place_on_its_k_first_state_equals_fla_and_the_torch_step(l2):
    from fla.ops.delta_rule import fused_recurrent_delta_rule

    from ccq_eval.ops.delta_net.fused_recurrent import fused_recurrent_delta_rule_in_place
    from tests.models.test_in_place_steps import delta_inputs

    expected, kernel, by_torch, launches = _three_ways(fused_recurrent_delta_rule_in_place,
                                                        fused_recurrent_delta_rule, delta_inputs(l2))
    assert launches == ["_gdn_step_kernel"]
    _close(expected, kernel, by_torch)
