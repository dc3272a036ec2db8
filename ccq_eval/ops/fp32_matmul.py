"""float32 matmuls at float32's precision, on tensor cores where a GPU has them.

CCQ's statistics need fp32's 24 mantissa bits (FP32_BOUND in ccq.py); TF32's 10 miss it. IEEE fp32 on a GPU runs on
CUDA cores, at a fraction of the tensor cores' rate. 3xTF32 (as CUTLASS does it) splits each operand into a TF32
part and the float32 remainder, ``a = a_hi + a_lo``, and sums three TF32 products, ``a_hi b_hi + a_hi b_lo + a_lo
b_hi``, accumulated in fp32; the dropped ``a_lo b_lo`` and the rounding of the remainders are ~2^-21 of the
product, the size of fp32's own rounding over a long sum.

``MODE`` picks it: "ieee" (the default on every device) or "3xtf32". In CCQ's read, written as torch ops, the
split's own passes (rounding, remainders, three products summed) move more memory than the tensor cores save in
compute: an H200 estimate of 1.3B-shaped layers puts the read at about twice the time with it
(benchmarks/ccq_profile.py; docs/gpu.md). It pays inside a fused kernel that splits in registers, as CUTLASS does.
On a CPU, which has no TF32, the three products are exact fp32 and only cost.
"""

from __future__ import annotations

import contextlib

import torch

MODES = ("ieee", "3xtf32")
MODE = "ieee"
_TF32_DROPPED_BITS = 13  # float32 keeps 23 stored mantissa bits, TF32 10
_ONE_TF32_PASS = False  # inside ``precision_for`` a bfloat16 / float16 model: one TF32 pass is precise enough
LOW_PRECISION = (torch.bfloat16, torch.float16)


@contextlib.contextmanager
def precision_for(dtype: torch.dtype):
    """Inside the block, float32 matmuls at the precision a model of ``dtype`` needs: fp32's for a float32 model
    (IEEE, or 3xTF32 under MODE); for a bfloat16 or float16 model one TF32 pass, whose error (operands rounded to 10
    mantissa bits: about 1e-3 of a product) stays below the rounding of the contracted query to the model's dtype
    (2^-8 for bfloat16; tests/models/test_fp32_matmul.py bounds it against the float64 definition)."""
    global _ONE_TF32_PASS
    saved, _ONE_TF32_PASS = _ONE_TF32_PASS, dtype in LOW_PRECISION
    try:
        yield
    finally:
        _ONE_TF32_PASS = saved


@contextlib.contextmanager
def matmul_precision(precision: str):
    """torch's fp32 matmul precision inside the block ("highest": IEEE; "high": TF32 allowed), whatever the
    process set (some libraries set TF32 process-wide)."""
    saved = torch.get_float32_matmul_precision()
    torch.set_float32_matmul_precision(precision)
    try:
        yield
    finally:
        torch.set_float32_matmul_precision(saved)


def ieee_fp32():
    """fp32 matmuls in full IEEE precision inside the block."""
    return matmul_precision("highest")


def round_to_tf32(x: torch.Tensor) -> torch.Tensor:
    """x (float32) rounded to TF32's 10 mantissa bits, to nearest, kept in float32."""
    bits = x.view(torch.int32)
    half = 1 << (_TF32_DROPPED_BITS - 1)
    return ((bits + half) & -(1 << _TF32_DROPPED_BITS)).view(torch.float32)


def split_tf32(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(hi, lo) with hi exact in TF32 and hi + lo == x exactly."""
    hi = round_to_tf32(x)
    return hi, x - hi


def tf32_matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """One matmul with TF32 allowed (tensor cores on a GPU; exact fp32 on a CPU)."""
    with matmul_precision("high"):
        return a @ b


def tf32_matmul_add_(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``out += a @ b`` in one GEMM with TF32 allowed."""
    with matmul_precision("high"):
        return out.baddbmm_(a, b)


def mode() -> str:
    if MODE not in MODES:
        raise ValueError(f"fp32_matmul.MODE must be one of {MODES}, got {MODE!r}")
    return MODE


def matmul(a: torch.Tensor, b: torch.Tensor, exact_left: bool = False) -> torch.Tensor:
    """``a @ b`` at fp32 precision for float32 operands; other dtypes as they are. exact_left: ``a`` holds
    values TF32 represents exactly (a 0/1 mask), so its remainder term is skipped."""
    if a.dtype == torch.float32 and _ONE_TF32_PASS:
        return tf32_matmul(a, b)
    if a.dtype != torch.float32 or mode() == "ieee":
        with ieee_fp32():
            return a @ b
    b_hi, b_lo = split_tf32(b)
    if exact_left:
        return tf32_matmul(a, b_hi) + tf32_matmul(a, b_lo)
    a_hi, a_lo = split_tf32(a)
    return tf32_matmul(a_hi, b_hi) + (tf32_matmul(a_hi, b_lo) + tf32_matmul(a_lo, b_hi))


def matmul_add_(out: torch.Tensor, a: torch.Tensor, b: torch.Tensor, exact_left: bool = False) -> torch.Tensor:
    """``out += a @ b`` for 3-D operands, at fp32 precision: in IEEE (or one TF32 pass where allowed), one GEMM that
    accumulates into ``out`` (no separate pass to add)."""
    if a.dtype == torch.float32 and _ONE_TF32_PASS:
        return tf32_matmul_add_(out, a, b)
    if a.dtype != torch.float32 or mode() == "ieee":
        with ieee_fp32():
            return out.baddbmm_(a, b)
    return out.add_(matmul(a, b, exact_left=exact_left))
