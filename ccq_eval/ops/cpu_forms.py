"""Install ccq-eval's torch implementations (``ops/shared_cpu_forms.py`` for what every family shares, each family's
``cpu.py`` in ``ccq_eval/ops/<family>/``) in place of fla's Triton-only functions.

fla binds its kernels as module-level names inside the layers and modules that call them, so the
backend replaces those names. Each replacement dispatches on the device of its first tensor
argument: CPU tensors take the torch path, anything else calls the original fla function untouched,
so installing never changes what runs on CUDA. Installation is explicit (``load_model`` does it for a
CPU model; tests call it) and idempotent; nothing happens at import.

When an fla upgrade moves or renames a symbol, ``install_cpu_backend`` fails with the symbol's name
(and ``tests/models/test_cpu_backend.py::test_every_patch_target_exists`` names it too).
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import os
import re
from typing import Any, Callable

import torch

from ccq_eval.families import Patch, cpu_patches


SHARED = "ccq_eval.ops.shared_cpu_forms"
# the fla names every family's layers share; each family's own are in its home (ccq_eval/families/, Family.patches)
SHARED_PATCHES: tuple[Patch, ...] = (
    # ShortConvolution: prefill and the single-token cache update
    Patch("fla.modules.causal_conv1d.ops", "causal_conv1d", f"{SHARED}:causal_conv1d"),
    Patch("fla.modules.causal_conv1d.ops", "causal_conv1d_update", f"{SHARED}:causal_conv1d_update", dispatched=True),
    # norms (RMSNorm with prenorm residual; the gated output norm)
    Patch("fla.modules.norm.layernorm", "rms_norm", f"{SHARED}:rms_norm"),
    Patch("fla.modules.norm.fused_norm_gate", "rms_norm_gated", f"{SHARED}:rms_norm_gated"),
    # MLP and gate activations
    Patch("fla.modules.mlp", "swiglu", f"{SHARED}:swiglu"),
    Patch("fla.modules.mlp", "swiglu_linear", f"{SHARED}:swiglu_linear"),
    Patch("fla.modules.activations.ops", "ACT2FN[swish]", f"{SHARED}:swish"),
    Patch("fla.modules.activations.ops", "ACT2FN[silu]", f"{SHARED}:swish"),
    Patch("fla.modules.activations.ops", "ACT2FN[sigmoid]", f"{SHARED}:sigmoid"),
    # losses
    Patch("fla.modules.fused_cross_entropy.ops", "FusedCrossEntropyLoss.forward", f"{SHARED}:fused_cross_entropy_forward"),
    Patch("fla.modules.fused_linear_cross_entropy.ops", "FusedLinearCrossEntropyLoss.forward",
          f"{SHARED}:fused_linear_cross_entropy_forward"),
    # rotary embeddings (Transformer++, Samba's attention, RetNet)
    Patch("fla.modules.rotary.ops", "rotary_embedding", f"{SHARED}:rotary_embedding"),
)


def patches() -> tuple[Patch, ...]:
    """Every name the backend replaces: the shared ones, then each family's."""
    return (*SHARED_PATCHES, *cpu_patches())


_DICT_ITEM = re.compile(r"^(\w+)\[(\w+)\]$")
_INSTALLED = False
_FLA_ON_CPU = False


@contextlib.contextmanager
def fla_kernels_on_cpu():
    """Inside the block CPU tensors go to fla's own functions, whose Triton kernels Triton's interpreter
    runs on CPU (TRITON_INTERPRET=1; the interpreter test tier). What fla lacks here (flash-attn's entry
    points without flash-attn) keeps the torch replacement."""
    global _FLA_ON_CPU
    saved, _FLA_ON_CPU = _FLA_ON_CPU, True
    try:
        yield
    finally:
        _FLA_ON_CPU = saved


def fla_kernels_asked_for() -> bool:
    """Inside ``fla_kernels_on_cpu``: CPU tensors go to Triton kernels (interpreted), not to torch code."""
    return _FLA_ON_CPU


class BackendSymbolMissing(RuntimeError):
    """fla no longer has a symbol the CPU backend replaces (an fla upgrade moved it)."""


def _resolve(target: Patch) -> tuple[Any, str, Any]:
    """Return (container, key, current value); the container is a module, class or dict."""
    try:
        module = importlib.import_module(target.module)
    except ImportError as exc:
        raise BackendSymbolMissing(f"CPU backend: cannot import {target.module} ({exc}); fla's layout changed") from exc
    item = _DICT_ITEM.match(target.symbol)
    if item:
        container = getattr(module, item.group(1), None)
        key = item.group(2)
        if not isinstance(container, dict) or key not in container:
            raise BackendSymbolMissing(f"CPU backend: {target.qualname} not found; fla's layout changed")
        return container, key, container[key]
    *owners, name = target.symbol.split(".")
    container = module
    for owner in owners:
        container = getattr(container, owner, None)
        if container is None:
            raise BackendSymbolMissing(f"CPU backend: {target.qualname} not found; fla's layout changed")
    if not hasattr(container, name):
        if target.may_be_absent:
            return container, name, None
        raise BackendSymbolMissing(f"CPU backend: {target.qualname} not found; fla's layout changed")
    return container, name, getattr(container, name)


def _first_tensor(args, kwargs) -> torch.Tensor | None:
    for value in (*args, *kwargs.values()):
        if isinstance(value, torch.Tensor):
            return value
    return None


def _dispatcher(original: Callable | None, replacement: Callable, qualname: str) -> Callable:
    @functools.wraps(replacement)
    def dispatch(*args, **kwargs):
        tensor = _first_tensor(args, kwargs)
        if tensor is not None and tensor.device.type == "cpu" and not (_FLA_ON_CPU and original is not None):
            return replacement(*args, **kwargs)
        if original is None:
            raise ImportError(f"{qualname} is not installed for device {tensor.device if tensor is not None else '?'}")
        return original(*args, **kwargs)

    dispatch.ccq_cpu_original = original
    dispatch.ccq_cpu_replacement = replacement
    return dispatch


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
    else:
        setattr(container, key, value)


def _takes_cpu_tensors(*args, **kwargs) -> tuple[bool, str | None]:
    """fla's backend verifier: CPU tensors, unless fla's own kernels are asked for on the CPU (Triton's interpreter)."""
    tensor = _first_tensor(args, kwargs)
    if tensor is None or tensor.device.type != "cpu":
        return False, "not a CPU tensor"
    return (False, "fla's kernels asked for on the CPU") if _FLA_ON_CPU else (True, None)


def _register_with_fla(target: Patch, entry: Callable) -> None:
    """The replacement as an fla backend of a dispatched entry point (fla.backends.register), chosen for CPU tensors."""
    from fla.backends import BaseBackend, register

    class CCQEvalCPUBackend(BaseBackend):
        backend_type = "ccq_eval_cpu"  # one per entry point: fla keeps a registry per dispatched function
        priority = 0

    register(entry, backend=CCQEvalCPUBackend, verifier=_takes_cpu_tensors)(target.resolved())


def uses_fla_dispatch(target: Patch) -> bool:
    """A dispatched entry point is registered with fla's dispatch, unless the user turned fla's dispatch off
    (FLA_DISABLE_BACKEND_DISPATCH=1); then its name is replaced like the others."""
    return target.dispatched and os.environ.get("FLA_DISABLE_BACKEND_DISPATCH") != "1"


def install_cpu_backend() -> None:
    """Install every target of ``patches()`` (fla's dispatch where fla dispatches the entry point, the name replaced
    elsewhere); resolves all of them before changing any."""
    global _INSTALLED
    if _INSTALLED:
        return
    resolved = [(target, *_resolve(target)) for target in patches()]
    for target, container, key, current in resolved:
        if uses_fla_dispatch(target):
            _register_with_fla(target, current)
        elif getattr(current, "ccq_cpu_replacement", None) is None:
            _set(container, key, _dispatcher(current, target.resolved(), target.qualname))
    _INSTALLED = True
