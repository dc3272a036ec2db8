"""Every own kernel checked, and timed, at given head shapes on a device, outside any model: what ``ccq-eval env``
shows (the verdicts a run on this device would reach, ops/trust.py) and what the GPU check measures at
batch 64 (benchmarks/gpu_check.py). Each call is built as fla's layers make it (their options, the state's layout),
with random inputs whose state has already seen a few hundred tokens."""

from __future__ import annotations

import importlib
import time
from dataclasses import dataclass
from typing import Callable

import torch

from ccq_eval.ops import trust

# the heads of the 1.3B models (hidden 2048): GLA 4 heads of d_k 256, d_v 512; Gated DeltaNet 8 of 128 and 256;
# DeltaNet 16 of 128; CCQ's statistics on GLA's and GDN's keys
PAPER_HEADS = {"gla": dict(H=4, K=256, V=512), "gated_deltanet": dict(H=8, K=128, V=256),
               "delta_net": dict(H=16, K=128, V=128)}
CCQ_HEADS = {"ccq_gla": dict(H=4, D=256), "ccq_gated_deltanet": dict(H=8, D=128)}


@dataclass
class KernelCall:
    """One own kernel's call: ``own()`` the step as the engine's fixed slots run it (trust-checked on first use),
    ``reference()`` its reference path (fla's function and the copy home; CCQ's torch forms), ``state`` the tensor
    the own step writes in place (None for a kernel that writes only new tensors: CCQ's packed read)."""

    kernel: str
    family: str
    shape: dict
    own: Callable[[], object]
    reference: Callable[[], object]
    state: torch.Tensor | None


def _route(model_type: str):
    """(the family's one-token route, fla's function it routes) of a family's in-place step."""
    from ccq_eval.families import family

    (route,) = family(model_type).in_place_steps
    original = getattr(importlib.import_module(route.module), route.symbol)
    return route, getattr(original, "ccq_routed_original", original)


def _step_inputs(model_type: str, B: int, H: int, K: int, V: int, dtype, device, g: torch.Generator) -> dict:
    def randn(*shape, scale=1.0):
        return (torch.randn(*shape, generator=g) * scale).to(device=device)

    q, k = randn(B, 1, H, K).to(dtype), randn(B, 1, H, K).to(dtype)
    v = randn(B, 1, H, V).to(dtype)
    if model_type == "gla":
        state = randn(B, H, V, K, scale=0.3)
        gk = torch.nn.functional.logsigmoid(randn(B, 1, H, K) + 4).to(dtype)
        return dict(q=q, k=k, v=v, gk=gk, initial_state=state, output_final_state=True, state_v_first=True)
    if model_type == "gated_deltanet":
        return dict(q=q, k=k, v=v, g=randn(B, 1, H).to(dtype), beta=randn(B, 1, H).to(dtype),
                    initial_state=randn(B, H, V, K, scale=0.3), output_final_state=True, use_qk_l2norm_in_kernel=True,
                    use_gate_in_kernel=True, A_log=randn(H), dt_bias=randn(H), use_beta_sigmoid_in_kernel=True,
                    allow_neg_eigval=False, state_v_first=True)
    return dict(q=q, k=k, v=v, beta=torch.rand(B, 1, H, generator=g).to(device=device, dtype=dtype),
                initial_state=randn(B, H, K, V, scale=0.3), output_final_state=True, use_qk_l2norm_in_kernel=True)


def in_place_call(model_type: str, batch: int, dtype, device, seed: int = 0) -> KernelCall:
    from ccq_eval.ops.in_place import kernel_name, routes_written_in_place

    route, original = _route(model_type)
    heads = PAPER_HEADS[model_type]
    kwargs = _step_inputs(model_type, batch, **heads, dtype=dtype, device=device,
                          g=torch.Generator().manual_seed(seed))

    def own():  # through the route, as the fixed slots call it: the trust check included
        with routes_written_in_place((route,)):
            return getattr(importlib.import_module(route.module), route.symbol)(**kwargs)

    def reference():
        o, new = original(**kwargs)
        kwargs["initial_state"].copy_(new)  # the copy home the fixed slots make of a new state
        return o

    return KernelCall(kernel_name(route), model_type, heads, own, reference, kwargs["initial_state"])


def ccq_step_call(model_type: str, batch: int, dtype, device, seed: int = 0) -> KernelCall:
    from ccq_eval.ops.ccq import contract_query, step
    from ccq_eval.ops.ccq.state import ReadGate

    H, D = CCQ_HEADS[model_type]["H"], CCQ_HEADS[model_type]["D"]
    g = torch.Generator().manual_seed(seed)
    keys = (torch.randn(batch, 256, H, D, generator=g) * 0.5 + 1).to(device)
    _, state = contract_query(keys, keys, torch.zeros(batch, 256, H, device=device), output_final_state=True)
    q, k = (torch.randn(batch, 1, H, D, generator=g).to(device=device, dtype=dtype) for _ in range(2))
    # the layer's whole step as the model calls it: its gate, and Gated DeltaNet's L2 norms of q and k
    gate = ReadGate((torch.randn(H, D, generator=g) * 0.1).to(device), torch.randn(H, generator=g).to(device))
    normalize = model_type == "ccq_gated_deltanet"

    def own():
        with torch.no_grad():
            return step.contract_read_step(q, k, gate, state, "trace", normalize, dtype)

    def reference():
        with torch.no_grad():
            return step.reference_read_step(q, k, gate, state, "trace", normalize, dtype)

    return KernelCall("CCQ step", model_type, {"H": H, "D": D}, own, reference, state.cov)


# a packed prefill's sequence lengths, cycled to the batch: chunks cut short, an empty sequence, one token
PACKED_LENGTHS = (96, 33, 0, 160, 1, 64)


def ccq_packed_call(model_type: str, batch: int, dtype, device, seed: int = 0) -> KernelCall:
    """CCQ's packed read as a layer's prefill calls it (its gate, Gated DeltaNet's norms, the 'trace' scale, the
    final statistics) over ``batch`` packed sequences, half of them carrying statistics from earlier keys. It writes
    nothing in place: ``state`` is None and its outputs are all compared."""
    from ccq_eval.ops.ccq import contract_query
    from ccq_eval.ops.ccq.read import contract_read, reference_read
    from ccq_eval.ops.ccq.state import ReadGate

    H, D = CCQ_HEADS[model_type]["H"], CCQ_HEADS[model_type]["D"]
    g = torch.Generator().manual_seed(seed)
    lengths = torch.tensor([PACKED_LENGTHS[i % len(PACKED_LENGTHS)] for i in range(batch)])
    cu = torch.nn.functional.pad(lengths.cumsum(0), (1, 0)).to(device=device, dtype=torch.int32)
    T = int(lengths.sum())
    keys = (torch.randn(batch, 64, H, D, generator=g) * 0.5 + 1).to(device)
    with torch.no_grad():
        _, state = contract_query(keys, keys, torch.zeros(batch, 64, H, device=device), output_final_state=True)
    state.count[::2] = 0  # a fresh sequence: the centre its first keys' mean
    q, k = ((torch.randn(1, T, H, D, generator=g) + shift).to(device=device, dtype=dtype) for shift in (0, 1))
    gate = ReadGate((torch.randn(H, D, generator=g) * 0.1).to(device), torch.randn(H, generator=g).to(device))
    normalize = model_type == "ccq_gated_deltanet"

    def own():
        with torch.no_grad():
            return contract_read(q, k, gate, state, True, 64, cu, "trace", normalize, dtype)

    def reference():
        with torch.no_grad():
            return reference_read(q, k, gate, state, True, 64, cu, "trace", normalize, dtype)

    return KernelCall("CCQ packed read", model_type, {"H": H, "D": D}, own, reference, None)


def calls(batch: int, dtype, device) -> list[KernelCall]:
    """Every own kernel's call at the 1.3B heads: the three in-place steps, CCQ's step and CCQ's packed read on GLA's
    and GDN's keys. CCQ's fused step and packed read exist only where Triton runs; on a CPU without the interpreter its torch form is its own
    reference, and there is nothing to check."""
    from ccq_eval.ops.in_place import runs_triton

    found = [in_place_call(t, batch, dtype, device) for t in PAPER_HEADS]
    if runs_triton(torch.empty(0, device=device)):
        found += [ccq_step_call(t, batch, dtype, device) for t in CCQ_HEADS]
        found += [ccq_packed_call(t, batch, dtype, device) for t in CCQ_HEADS]
    return found


def check(call: KernelCall) -> trust.Verdict | None:
    """Run the call once (its trust check on first use), and the verdict it reached."""
    with torch.no_grad():
        call.own()
    return trust.latest(call.kernel)


def timed_ms(fn: Callable[[], object], device, repeats: int = 20) -> float:
    """Median milliseconds of ``fn``: replays of a CUDA graph of it on a GPU (no launch cost from the host), eager
    calls elsewhere."""
    if torch.device(device).type != "cuda":
        times = []
        for _ in range(max(3, repeats // 4)):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
        return 1000 * sorted(times)[len(times) // 2]
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    graph.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def copy_ms(tensor: torch.Tensor, device) -> float:
    """A device copy of a tensor the size of ``tensor`` (read and written once): the floor a step over it meets."""
    target = torch.empty_like(tensor)
    return timed_ms(lambda: target.copy_(tensor), device)


def check_all(device, dtype=None, batch: int = trust.TRIAL_ROWS) -> dict[str, str]:
    """Every own kernel checked on ``device`` at the 1.3B heads (bfloat16 on a GPU, float32 on a CPU by default):
    the verdicts a run there would reach, as ``trust.verdicts()`` then holds them."""
    device = torch.device(device)
    if device.type == "cpu":
        from ccq_eval.ops.cpu_forms import install_cpu_backend

        install_cpu_backend()
    dtype = dtype or (torch.bfloat16 if device.type == "cuda" else torch.float32)
    for call in calls(batch, dtype, device):
        check(call)
    return trust.verdicts()
