"""Install ccq-eval's torch implementations (``cpu_ops``) in place of fla's Triton-only functions.

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
import re
from dataclasses import dataclass
from typing import Any, Callable

import torch

from ccq_eval.models import cpu_ops, cpu_ops_other_layers


@dataclass(frozen=True)
class PatchTarget:
    module: str
    symbol: str  # "name", "Class.method" or "DICT[key]"
    replacement: Callable
    # fla defines some names only when an optional package imports (flash-attn): absent is fine then
    may_be_absent: bool = False

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.symbol}"


PATCHES: tuple[PatchTarget, ...] = (
    # GLA layer
    PatchTarget("fla.layers.gla", "chunk_gla", cpu_ops.chunk_gla),
    PatchTarget("fla.layers.gla", "fused_recurrent_gla", cpu_ops.fused_recurrent_gla),
    PatchTarget("fla.layers.gla", "fused_chunk_gla", cpu_ops.fused_chunk_gla),
    # Gated DeltaNet layer (the fused q/k/v convolution calls causal_conv1d directly)
    PatchTarget("fla.layers.gated_deltanet", "chunk_gated_delta_rule", cpu_ops.chunk_gated_delta_rule),
    PatchTarget("fla.layers.gated_deltanet", "fused_recurrent_gated_delta_rule",
                cpu_ops.fused_recurrent_gated_delta_rule),
    PatchTarget("fla.layers.gated_deltanet", "causal_conv1d", cpu_ops.causal_conv1d),
    # ShortConvolution: prefill and the single-token cache update
    PatchTarget("fla.modules.causal_conv1d.ops", "causal_conv1d", cpu_ops.causal_conv1d),
    PatchTarget("fla.modules.causal_conv1d.ops", "causal_conv1d_update", cpu_ops.causal_conv1d_update),
    # norms (RMSNorm with prenorm residual; the gated output norm)
    PatchTarget("fla.modules.norm.layernorm", "rms_norm", cpu_ops.rms_norm),
    PatchTarget("fla.modules.norm.fused_norm_gate", "rms_norm_gated", cpu_ops.rms_norm_gated),
    # MLP and gate activations
    PatchTarget("fla.modules.mlp", "swiglu", cpu_ops.swiglu),
    PatchTarget("fla.modules.mlp", "swiglu_linear", cpu_ops.swiglu_linear),
    PatchTarget("fla.modules.activations.ops", "ACT2FN[swish]", cpu_ops.swish),
    PatchTarget("fla.modules.activations.ops", "ACT2FN[silu]", cpu_ops.swish),
    PatchTarget("fla.modules.activations.ops", "ACT2FN[sigmoid]", cpu_ops.sigmoid),
    # losses
    PatchTarget("fla.modules.fused_cross_entropy.ops", "FusedCrossEntropyLoss.forward",
                cpu_ops.fused_cross_entropy_forward),
    PatchTarget("fla.modules.fused_linear_cross_entropy.ops", "FusedLinearCrossEntropyLoss.forward",
                cpu_ops.fused_linear_cross_entropy_forward),
    # DeltaNet layer (its q/k/v convolutions are ShortConvolution, above)
    PatchTarget("fla.layers.delta_net", "chunk_delta_rule", cpu_ops_other_layers.chunk_delta_rule),
    PatchTarget("fla.layers.delta_net", "fused_recurrent_delta_rule", cpu_ops_other_layers.fused_recurrent_delta_rule),
    # RetNet's multi-scale retention, every mode the layer can pick
    PatchTarget("fla.layers.multiscale_retention", "chunk_retention", cpu_ops_other_layers.chunk_retention),
    PatchTarget("fla.layers.multiscale_retention", "fused_chunk_retention", cpu_ops_other_layers.fused_chunk_retention),
    PatchTarget("fla.layers.multiscale_retention", "fused_recurrent_retention", cpu_ops_other_layers.fused_recurrent_retention),
    PatchTarget("fla.layers.multiscale_retention", "parallel_retention", cpu_ops_other_layers.parallel_retention),
    # HGRN2 layer: GLA's read under its own names, the query activation, the fused output norm + projection
    PatchTarget("fla.layers.hgrn2", "chunk_gla", cpu_ops.chunk_gla),
    PatchTarget("fla.layers.hgrn2", "fused_recurrent_gla", cpu_ops.fused_recurrent_gla),
    PatchTarget("fla.layers.hgrn2", "fused_chunk_gla", cpu_ops.fused_chunk_gla),
    PatchTarget("fla.layers.hgrn2", "swish", cpu_ops.swish),
    PatchTarget("fla.layers.hgrn2", "rms_norm_linear", cpu_ops_other_layers.rms_norm_linear),
    # Mamba2's gated group RMSNorm (its selective scan and convolution run fla's torch fallback on CPU)
    PatchTarget("fla.modules.norm.layernorm_gated", "rmsnorm_fn", cpu_ops_other_layers.rmsnorm_fn),
    # Transformer++: flash-attn entry points (absent without flash-attn) and rotary embeddings
    PatchTarget("fla.layers.attn", "flash_attn_func", cpu_ops.flash_attn_func),
    PatchTarget("fla.layers.attn", "flash_attn_varlen_func", cpu_ops.flash_attn_varlen_func, may_be_absent=True),
    PatchTarget("fla.modules.rotary.ops", "rotary_embedding", cpu_ops.rotary_embedding),
)

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


class BackendSymbolMissing(RuntimeError):
    """fla no longer has a symbol the CPU backend replaces (an fla upgrade moved it)."""


def _resolve(target: PatchTarget) -> tuple[Any, str, Any]:
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


def install_cpu_backend() -> None:
    """Replace every target in ``PATCHES``; resolves all of them before changing any."""
    global _INSTALLED
    if _INSTALLED:
        return
    resolved = [(target, *_resolve(target)) for target in PATCHES]
    for target, container, key, current in resolved:
        if getattr(current, "ccq_cpu_replacement", None) is not None:
            continue
        _set(container, key, _dispatcher(current, target.replacement, target.qualname))
    _INSTALLED = True
