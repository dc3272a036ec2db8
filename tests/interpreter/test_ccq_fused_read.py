"""CCQ's packed read as one Triton pass (ops/ccq/fused_chunk.py) under Triton's interpreter, against its reference
(the torch composition over chunk slots, packed.py, its blocks cut small so chunks of a sequence fall in different
blocks) and against the float64 definition (naive.py, per sequence, carried keys as its prefix): empty and one-token
sequences, sequences shorter than a chunk and spanning several, statistics carried in (one of them a sequence that has
seen no key), the final statistics; the layer's whole read (the gate or a fixed lam, Gated DeltaNet's L2 norms) in
one launch; whole sequences (no cu_seqlens) through the same pass; gradients through the torch forms (a float64
gradcheck of the layer's entry); nothing allocated beyond its outputs; the device checks covering it."""

from __future__ import annotations

import pytest
import torch
import triton
import triton.language as tl

from ccq_eval.ops import trust
from ccq_eval.ops.ccq import BF16_BOUND, FP32_BOUND, CCQState, contract_query, naive_contract_query
from ccq_eval.ops.ccq import fused_chunk
from ccq_eval.ops.ccq import state as shared
from ccq_eval.ops.ccq.chunk import torch_contract_query
from ccq_eval.ops.ccq.read import contract_read, reference_read
from ccq_eval.ops.ccq.state import ReadGate
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from tests.interpreter.patches import count_kernel_launches
from tests.interpreter.test_ccq_launches import Launches
from tests.interpreter.test_ccq_step_kernel import device_checks
from tests.interpreter.test_kernels import rel
from tests.kernel_verdicts import fresh_verdicts  # noqa: F401 - autouse

H, D = 2, 40  # D not a power of two: masked lanes
LENGTHS = [0, 1, 70, 33, 5, 130]  # empty, one token, within and across the pass's 32-token chunks and the 64-key centre
PREFIX = 50  # keys each carried sequence has seen before


def packed_inputs(dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    T = sum(LENGTHS)
    cu = torch.nn.functional.pad(torch.tensor(LENGTHS).cumsum(0), (1, 0)).to(torch.int32)
    q = torch.randn(1, T, H, D, generator=g).to(dtype)
    k = (torch.randn(1, T, H, D, generator=g) * 0.5 + 2).to(dtype)  # a shared mean: what the centre is for
    lam = torch.rand(1, T, H, generator=g)
    prefix = torch.randn(len(LENGTHS), PREFIX, H, D, generator=g) * 0.7 + 1.5
    return q, k, lam, cu, prefix


def carried(prefix: torch.Tensor) -> CCQState:
    """The statistics of each sequence's prefix keys; the second sequence has seen none (count 0)."""
    _, state = contract_query(prefix, prefix, torch.zeros(prefix.shape[:3]), output_final_state=True)
    state.count[1], state.mean[1], state.cov[1] = 0, 0, 0
    return state


def definition(q, k, lam, cu, prefix, with_state, sigma_scale):
    """(q' [1, T, H, D], final means, final covariances) in float64, sequence by sequence, from the definition."""
    out, means, covs = [], [], []
    for i in range(len(LENGTHS)):
        a, b = int(cu[i]), int(cu[i + 1])
        before = prefix[i:i + 1] if with_state and i != 1 else None
        out.append(naive_contract_query(q[:, a:b], k[:, a:b], lam[:, a:b], sigma_scale, prefix_keys=before))
        keys = torch.cat([x[0].double() for x in (before, k[:, a:b]) if x is not None]) if (before is not None or b > a) \
            else torch.zeros(0, H, D, dtype=torch.float64)
        mean = keys.mean(0) if len(keys) else torch.zeros(H, D, dtype=torch.float64)
        centred = keys - mean
        means.append(mean)
        covs.append(torch.einsum("nhi,nhj->hij", centred, centred) / max(len(keys), 1))
    return torch.cat(out, dim=1), torch.stack(means), torch.stack(covs)


@pytest.mark.parametrize("with_state", [False, True], ids=["fresh", "carried"])
@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_the_pass_equals_its_reference_and_the_definition(dtype, sigma_scale, with_state, monkeypatch):
    monkeypatch.setattr(trust, "_MODE", "own")  # the pass itself, without the first use's check
    monkeypatch.setattr(shared, "BLOCK_TOKENS", 64)  # the reference's blocks: one chunk slot each
    q, k, lam, cu, prefix = packed_inputs(dtype)
    state = carried(prefix) if with_state else None
    with torch.no_grad():
        with fla_kernels_on_cpu(), count_kernel_launches() as launches:
            got, got_state = contract_query(q, k, lam, state, True, 64, cu, sigma_scale)
        expected, expected_state = torch_contract_query(q, k, lam, state, True, 64, cu, sigma_scale)
    assert launches == ["_ccq_fused_chunk_kernel"]
    assert got.dtype == dtype and got.shape == q.shape
    bound = BF16_BOUND if dtype == torch.bfloat16 else 2e-5
    assert rel(got, expected) < bound
    assert torch.equal(got_state.count, expected_state.count)
    assert rel(got_state.mean, expected_state.mean) < 1e-5 and rel(got_state.cov, expected_state.cov) < 1e-5
    exact_q, exact_means, exact_covs = definition(q, k, lam, cu, prefix, with_state, sigma_scale)
    assert rel(got, exact_q) < (BF16_BOUND if dtype == torch.bfloat16 else FP32_BOUND)
    assert rel(got_state.mean, exact_means) < 1e-5 and rel(got_state.cov, exact_covs) < 1e-5
    seen = torch.tensor(LENGTHS) + (PREFIX * (torch.arange(len(LENGTHS)) != 1) if with_state else 0)
    assert torch.equal(got_state.count, seen)


GATES = {"gate": lambda: ReadGate(torch.randn(H, D) * 0.3, torch.randn(H)), "fixed": lambda: ReadGate(fixed=0.4)}


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("gate", sorted(GATES))
@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_layers_whole_read_is_one_launch_equal_to_its_torch_form(normalize, gate, dtype, monkeypatch):
    """From the layer's raw q and k: the norms, the gate, the statistics and the read in one launch, equal to the
    norms, the gate and the packed composition (reference_read); the normalised k handed to the backbone."""
    monkeypatch.setattr(trust, "_MODE", "own")
    torch.manual_seed(1)
    q, k, _, cu, prefix = packed_inputs(dtype, seed=2)
    q, k = q * 3, k * 3
    read_gate = GATES[gate]()
    state = carried(prefix)
    with torch.no_grad():
        with fla_kernels_on_cpu(), count_kernel_launches() as launches:
            got, got_k, got_state = contract_read(q, k, read_gate, state, True, 64, cu, "trace", normalize, dtype)
        expected, expected_k, expected_state = reference_read(q, k, read_gate, state, True, 64, cu, "trace",
                                                              normalize, dtype)
    assert launches == ["_ccq_fused_chunk_kernel"]
    assert (got_k is k) != normalize  # the raw k goes on to the backbone unless it was normalised
    bound = BF16_BOUND if dtype == torch.bfloat16 else 2e-5
    assert got.dtype == dtype and rel(got, expected) < bound and rel(got_k, expected_k) < bound
    assert torch.equal(got_state.count, expected_state.count)
    assert rel(got_state.mean, expected_state.mean) < 1e-5 and rel(got_state.cov, expected_state.cov) < 1e-5


def test_whole_sequences_take_the_same_pass(monkeypatch):
    """B sequences of T tokens without cu_seqlens: one launch, equal to the chunked composition, no final state
    asked for and none made."""
    monkeypatch.setattr(trust, "_MODE", "own")
    torch.manual_seed(3)
    q, k, lam = torch.randn(3, 45, H, D), torch.randn(3, 45, H, D) + 1, torch.rand(3, 45, H)
    with torch.no_grad():
        with fla_kernels_on_cpu(), count_kernel_launches() as launches:
            got, none = contract_query(q, k, lam)
        expected, _ = torch_contract_query(q, k, lam, None, False, 64, None, "none")
    assert launches == ["_ccq_fused_chunk_kernel"] and none is None
    assert rel(got, expected) < 2e-5


def test_gradients_take_the_torch_forms():
    """The pass has no backward: a call that needs gradients takes the composition (gradchecked in
    tests/models/test_ccq_gradients.py), and its result still carries them."""
    q, k, lam, cu, _ = packed_inputs(torch.float32)
    q.requires_grad_(True)
    with fla_kernels_on_cpu(), count_kernel_launches() as launches:
        got, _ = contract_query(q, k, lam, None, False, 64, cu)
    assert launches == [] and got.requires_grad


def test_a_layers_read_passes_a_float64_gradcheck_where_triton_runs():
    """The entry a layer trains through (the gate, Gated DeltaNet's norms, packed sequences) where fla's kernels run:
    its gradients are the torch forms', checked against finite differences in float64."""
    g = torch.Generator().manual_seed(4)
    cu = torch.tensor([0, 3, 3, 9], dtype=torch.int32)
    q, k = (torch.randn(1, 9, 1, 4, generator=g, dtype=torch.float64, requires_grad=True) for _ in range(2))
    weight = torch.randn(1, 4, generator=g, dtype=torch.float64, requires_grad=True)
    bias = torch.randn(1, generator=g, dtype=torch.float64, requires_grad=True)

    def read(q, k, weight, bias):
        q_clean, k_read, state = contract_read(q, k, ReadGate(weight, bias), None, True, 2, cu, "trace", True,
                                               torch.float64)
        return q_clean, k_read, state.cov

    with fla_kernels_on_cpu():
        assert torch.autograd.gradcheck(read, (q, k, weight, bias))


def test_the_first_use_check_trusts_the_sound_pass():
    q, k, lam, cu, prefix = packed_inputs(torch.bfloat16)
    state = carried(prefix)
    with torch.no_grad(), fla_kernels_on_cpu():
        contract_query(q, k, lam, state, True, 64, cu, "trace")
    (verdict,) = [v for n, v in trust.verdicts().items() if n.startswith("CCQ packed read (Triton (interpreter))")]
    assert verdict.startswith("own (agrees"), verdict


def test_the_device_checks_cover_the_packed_read():
    """`ccq-eval env` and benchmarks/gpu_check.py check CCQ's packed read as the models' prefill calls it (GLA: the
    gate; Gated DeltaNet: the gate and the L2 norms) against its torch form, at the 1.3B heads: trusted, every output
    within tolerance, nothing in place to check."""
    found = device_checks("CCQ packed read")
    assert [family for family, *_ in found] == ["ccq_gla", "ccq_gated_deltanet"]
    for _, verdict, difference, in_place in found:
        assert verdict.path == "own" and in_place is None and difference < trust.TOLERANCE[torch.bfloat16], verdict


class Allocations(Launches):
    """Bytes of every tensor torch allocates outside Triton's launches (the interpreter's own work inside a launch
    is the GPU's registers, not memory a GPU would hold)."""

    def __init__(self):
        super().__init__(skipped=set())
        self.bytes = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if not self.inside and func._overloadpacket.__name__ in {"empty", "empty_like", "new_empty", "empty_strided",
                                                                 "zeros"}:
            self.bytes += out.numel() * out.element_size()
        return out


@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_pass_allocates_its_outputs_alone(normalize, monkeypatch):
    """Its working set (the chunk state, the tiles) lives on chip: beyond its outputs (q', Gated DeltaNet's
    normalised k, the final statistics) the read allocates nothing, whatever the length."""
    monkeypatch.setattr(trust, "_MODE", "own")
    q, k, _, cu, prefix = packed_inputs(torch.bfloat16)
    state, N = carried(prefix), len(LENGTHS)
    book = Allocations()
    with torch.no_grad(), fla_kernels_on_cpu(), book.triton_kernels(), book:
        contract_read(q, k, ReadGate(fixed=0.5), state, True, 64, cu, "none", normalize, torch.bfloat16)
    outputs = q.numel() * 2 * (2 if normalize else 1) + N * 8 + N * H * D * 4 + N * H * D * D * 4
    assert book.bytes == outputs, (book.bytes, outputs, book.names)


@triton.jit
def _dot_kernel(a, b, out, PRECISION: tl.constexpr):
    o = tl.arange(0, 16)
    a_tile = tl.load(a + o[:, None] * 16 + o[None, :])
    b_tile = tl.load(b + o[:, None] * 16 + o[None, :])
    tl.store(out + o[:, None] * 16 + o[None, :], tl.dot(a_tile, b_tile, input_precision=PRECISION))


def test_the_interpreter_multiplies_three_tf32_products_as_a_gpu():
    """The pass's dots (``tf32x3``) run under the interpreter as a GPU's tensor cores run them (patches.py, 5): not
    the exact fp32 product, within 1e-6 of it, where one TF32 product is 1e-3 off."""
    g = torch.Generator().manual_seed(5)
    a, b = torch.randn(16, 16, generator=g), torch.randn(16, 16, generator=g)
    exact = a.double() @ b.double()
    found = {}
    for precision in ("ieee", "tf32x3"):
        found[precision] = torch.empty(16, 16)
        _dot_kernel[(1,)](a, b, found[precision], PRECISION=precision)
    one_pass = (a.view(torch.int32) + 0x1000 & -0x2000).view(torch.float32).double() @ \
        (b.view(torch.int32) + 0x1000 & -0x2000).view(torch.float32).double()
    assert not torch.equal(found["tf32x3"], found["ieee"])
    assert rel(found["tf32x3"], exact) < 1e-6 < 1e-4 < rel(one_pass, exact)
    assert fused_chunk.DOT.value == "tf32x3"
