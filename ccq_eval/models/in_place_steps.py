"""Decoding steps that write the recurrent state where it lies, for the engine's fixed slots (generation/static_rows.py).

fla's fused-recurrent reads return a new final state each call; in fixed slots it would then be copied into the
slot's buffer: for a 1.3B GLA at batch 64, 3.2 GB read and written once more every step. Inside
``states_written_in_place(model)``, each read the model's family names in ``Family.in_place_steps`` goes first to
ccq-eval's step (``family_models/<family>/decode_step.py``), which updates ``initial_state`` itself and returns it;
a call the step does not take (a prefill, packed sequences, gradients) goes on to fla's function. Outside the block
nothing changes: a caller that keeps its old state (a copied cache, a snapshot) never sees it move."""

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
    from ccq_eval.models.cpu_backend import fla_kernels_asked_for

    return x.device.type != "cpu" or fla_kernels_asked_for()


def _routed(original, step):
    @functools.wraps(original)
    def read(*args, **kwargs):
        done = None if args else step(**kwargs)
        return done if done is not None else original(*args, **kwargs)

    return read


def states_written_in_place(model):
    """Inside the block this model's one-token reads update their state in place (see the module's docstring)."""
    from ccq_eval.families import family_of

    return routes_written_in_place(family_of(model).in_place_steps)


@contextlib.contextmanager
def routes_written_in_place(routes):
    """Inside the block each route's fla name (``Family.in_place_steps``) tries its in-place step first."""
    from ccq_eval.models.cpu_backend import replacement  # "module:function", as the CPU backend's patches name it

    saved = []
    for route in routes:
        module = importlib.import_module(route.module)
        original = getattr(module, route.symbol)
        saved.append((module, route.symbol, original))
        setattr(module, route.symbol, _routed(original, replacement(route)))
    try:
        yield
    finally:
        for module, name, original in reversed(saved):
            setattr(module, name, original)
