"""The trust check on the Triton forms (interpreted): CCQ's fused step, CCQ's packed read and the GLA in-place
kernel, each replaced by a stand-in that writes a wrong result or raises, are caught on first use against their
references (CCQ's torch forms in float64; fla's fused-recurrent kernel), turned off for the process, and the engine's
fixed slots then give batch 1's tokens with the verdict naming the fallback (tests/models/test_kernel_trust.py: the
torch forms)."""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
import torch

from ccq_eval.ops.gla import fused_recurrent as gla_step
from ccq_eval.generation.engine import generate
from ccq_eval.ops import trust
from ccq_eval.ops.ccq import contract_query, contract_query_step
from ccq_eval.ops.ccq import fused_chunk
from ccq_eval.ops.ccq import step as ccq_step
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model
from tests.kernel_verdicts import fresh_verdicts  # noqa: F401 - autouse


def wrong_sigma(q, k, lam, state, *args):
    out = REAL_FUSED(q, k, lam, state, *args)
    state.cov.mul_(0.5)
    return out


def wrong_gla_state(q, k, v, g, state, scale):
    o = REAL_GLA(q, k, v, g, state, scale)
    state.mul_(0.5)
    return o


def wrong_packed_read(*args, **kwargs):
    q_out, k_out, final = REAL_PACKED(*args, **kwargs)
    return q_out * 0.5, k_out, final


def raises(*args, **kwargs):
    raise RuntimeError("stand-in: the kernel failed to compile")


REAL_FUSED, REAL_GLA, REAL_PACKED = ccq_step.contract_query_step_fused, gla_step._triton_step, fused_chunk.fused_read
CASES = {("CCQ step", "wrong state"): (ccq_step, "contract_query_step_fused", wrong_sigma),
         ("CCQ step", "raises"): (ccq_step, "contract_query_step_fused", raises),
         ("CCQ packed read", "wrong state"): (fused_chunk, "fused_read", wrong_packed_read),
         ("CCQ packed read", "raises"): (fused_chunk, "fused_read", raises),
         ("fused_recurrent_gla in place", "wrong state"): (gla_step, "_triton_step", wrong_gla_state)}


@pytest.mark.parametrize("kernel,fault", list(CASES))
def test_a_faulty_triton_step_is_caught_and_the_run_gives_batch_ones_tokens(kernel, fault, monkeypatch):
    torch.manual_seed(0)
    model = tiny_model("ccq_gla", fuse_cross_entropy=False, ccq_fixed_lambda=0.5)
    asked = [replace(r, score=(), max_new_tokens=min(r.max_new_tokens, 4)) for r in requests()[2:]]
    with fla_kernels_on_cpu():
        trust.set_mode("reference")
        expected = [r.tokens for r in generate(model, TOKENIZER, asked, batch_size=1, static=False)]
        trust.forget()
        trust.set_mode("auto")
        module, name, stand_in = CASES[(kernel, fault)]
        monkeypatch.setattr(module, name, stand_in)
        with warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            got = [r.tokens for r in generate(model, TOKENIZER, asked, batch_size=2, static=True)]
    assert got == expected
    off = [str(w.message) for w in said if "own kernel off" in str(w.message)]
    assert len(off) == 1 and kernel in off[0] and "Triton (interpreter)" in off[0], off
    (verdict,) = [v for n, v in trust.verdicts().items() if n.startswith(kernel)]
    assert verdict.startswith("reference") and ("differs" in verdict if fault == "wrong state" else "raised" in verdict)


def test_the_sound_fused_step_is_trusted_on_the_interpreter():
    torch.manual_seed(0)
    q, k = torch.randn(3, 1, 2, 24), torch.randn(3, 1, 2, 24) + 2
    _, state = contract_query(torch.randn(3, 30, 2, 24), torch.randn(3, 30, 2, 24) + 2, torch.zeros(3, 30, 2),
                                  output_final_state=True)
    with torch.no_grad(), fla_kernels_on_cpu():
        contract_query_step(q, k, torch.rand(3, 1, 2), state, "trace")
    (verdict,) = [v for n, v in trust.verdicts().items() if n.startswith("CCQ step (Triton (interpreter))")]
    assert verdict.startswith("own (agrees")
