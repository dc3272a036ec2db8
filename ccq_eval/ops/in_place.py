"""Decoding steps that write the recurrent state where it lies, for the engine's fixed slots (generation/static_rows.py).

fla's fused-recurrent reads return a new final state each call; in fixed slots it would then be copied into the
slot's buffer: for a 1.3B GLA at batch 64, 3.2 GB read and written once more every step. Inside
``states_written_in_place(model)``, each read the model's family names in ``Family.in_place_steps`` goes first to
ccq-eval's step (``ops/<family>/fused_recurrent.py``), which updates ``initial_state`` itself and returns it;
a call the step does not take (a prefill, packed sequences, gradients) goes on to fla's function. Each step is first
checked against fla's function on the device (ops/trust.py): one that disagrees is off, and fla's function
runs with its state copied home. Outside the block nothing changes: a caller that keeps its old state (a copied cache, a snapshot) never sees it move."""

from __future__ import annotations

import contextlib
import functools
import importlib

import torch


def takes_in_place(q, v, state, output_final_state, cu_seqlens, v_first: bool = True) -> bool:
    """One token a row, a float32 state (V-first ``[B, H, V, K]``, or K-first) to carry and keep, no gradients, no
    packing; not for float64 inputs (a reference run), whose float64 arithmetic fla's path keeps."""
    if state is None or not output_final_state or cu_seqlens is not None or torch.is_grad_enabled():
        return False
    if q.dtype == torch.float64:  # a reference run
        return False
    B, T, _, K = q.shape
    return (T == 1 and state.dtype == torch.float32 and state.is_contiguous() and state.device == q.device
            and tuple(state.shape) == ((B, v.shape[2], v.shape[3], K) if v_first else (B, v.shape[2], K, v.shape[3])))


def runs_triton(x: torch.Tensor) -> bool:
    """The Triton kernel on a GPU, and on the CPU where fla's kernels are asked for (Triton's interpreter)."""
    from ccq_eval.ops.cpu_forms import fla_kernels_asked_for

    return x.device.type != "cpu" or fla_kernels_asked_for()


# a call's tensors that hold one entry per row (a trial takes the first few of each)
PER_ROW = ("q", "k", "v", "g", "gk", "beta", "initial_state")


def _trial(step, original, kwargs: dict) -> float:
    """The own step beside fla's function (the reference, whose new state the fixed slots would copy home) on the
    call's first rows: the largest relative difference of the output and the new state; raises where the step's
    state is not the tensor it was given."""
    from ccq_eval.ops import trust

    rows = min(trust.TRIAL_ROWS, kwargs["q"].shape[0])
    small = {**kwargs, **trust.leading_rows({n: kwargs[n] for n in PER_ROW if kwargs.get(n) is not None},
                                                   rows)}
    given, before = small["initial_state"], small["initial_state"].clone()
    done = step(**small)
    if done is None:
        raise trust.Declined()
    o, returned = done
    expected_o, expected_state = original(**{**small, "initial_state": before})
    trust.check_in_place(given, returned)
    return max(trust.relative_difference(o, expected_o), trust.relative_difference(given,
                                                                                                 expected_state))


def _routed(original, step, kernel: str):
    from ccq_eval.ops import trust

    def checked(kwargs) -> bool:
        q, v = kwargs.get("q"), kwargs.get("v")
        if not isinstance(q, torch.Tensor) or not isinstance(v, torch.Tensor) or kwargs.get("initial_state") is None:
            return True  # not a call the step takes (it says so itself)
        options = {k: value for k, value in kwargs.items() if isinstance(value, bool)}
        shape = dict(zip(("H", "K"), q.shape[2:])) | dict(zip(("HV", "V"), v.shape[2:]))
        return trust.trusted(kernel, q, runs_triton(q), shape, options, lambda: _trial(step, original, kwargs))

    @functools.wraps(original)
    def read(*args, **kwargs):
        done = None if args or not checked(kwargs) else step(**kwargs)
        return done if done is not None else original(*args, **kwargs)

    read.ccq_routed_original = original
    return read


def states_written_in_place(model):
    """Inside the block this model's one-token reads update their state in place (see the module's docstring)."""
    from ccq_eval.families import family_of

    return routes_written_in_place(family_of(model).in_place_steps)


def kernel_name(route) -> str:
    """How the trust check names a route's step: fla's function and the layers that call it (one verdict a family)."""
    return f"{route.symbol} in place, {route.module.removeprefix('fla.layers.')} layers"


@contextlib.contextmanager
def routes_written_in_place(routes):
    """Inside the block each route's fla name (``Family.in_place_steps``) tries its in-place step first."""

    saved = []
    for route in routes:
        module = importlib.import_module(route.module)
        original = getattr(module, route.symbol)
        saved.append((module, route.symbol, original))
        setattr(module, route.symbol, _routed(original, route.resolved(), kernel_name(route)))
    try:
        yield
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)
