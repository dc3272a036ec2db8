"""Five process-local patches that let Triton's interpreter (TRITON_INTERPRET=1) run fla 0.6's real
kernels (and ccq-eval's own) on CPU tensors as a GPU runs them. Applied by this folder's conftest before fla is imported; nothing outside the
interpreter tier's process sees them.

1. ``Autotuner.prune_configs`` keeps only the first config: autotuning benchmarks each config through
   the active GPU driver, and on CPU there is none ("0 active drivers"). One config is what a tuned run
   would also pick for some shape; the kernels' results do not depend on the config.
2. The interpreter's AST rewriter turns ``for i in range(...)`` loop variables into Triton tensors, as
   compiled Triton does: fla calls ``i_t.to(tl.int64)`` on them (e.g. ``fla/ops/common/chunk_h.py``),
   which a Python int has no method for.
3. ``FusedCrossEntropyLoss.forward`` asserts a CUDA device; the tier compares logits, not fused losses,
   so models are built with the fused loss off and the assert is never reached (checked, not patched).
4. A float32 -> bfloat16 cast (``x.to(tl.bfloat16)``, a store into a bfloat16 tensor) rounds to nearest even, as
   a GPU's ``cvt.rn.bf16.f32`` and torch do: the interpreter truncates toward zero, which puts a kernel that rounds
   an intermediate to bfloat16 (CCQ's step: Gated DeltaNet's normalised q and k) a unit of the last place from
   its torch form in about half the elements.
5. A ``tl.dot`` asked for ``input_precision="tf32x3"`` (CCQ's packed read) multiplies as a GPU's tensor cores do
   (three TF32 products of each operand's TF32 part and the rest): the interpreter otherwise ignores the precision
   and multiplies in full fp32, hiding what the device's arithmetic does.
"""

from __future__ import annotations

import ast
import contextlib
import os


def apply() -> None:
    if os.environ.get("TRITON_INTERPRET") != "1":
        raise RuntimeError("the interpreter tier needs TRITON_INTERPRET=1 in the environment before triton is "
                           "imported; run it with `make test-interpreter`")
    from triton.runtime import autotuner, interpreter

    def first_config(self, kwargs):
        return self.configs[:1]

    autotuner.Autotuner.prune_configs = first_config

    transformer = interpreter.ASTTransformer
    if not getattr(transformer, "_ccq_loop_vars", False):
        original = getattr(transformer, "visit_For", None)

        def visit_For(self, node):
            # `i = i` at the top of the body: visit_Assign rewrites it to interpreter_semantic.to_tensor(i)
            if isinstance(node.target, ast.Name):
                rebind = ast.Assign(targets=[ast.Name(id=node.target.id, ctx=ast.Store())],
                                    value=ast.Name(id=node.target.id, ctx=ast.Load()))
                node.body.insert(0, ast.copy_location(rebind, node))
            return original(self, node) if original else self.generic_visit(node)

        transformer.visit_For = visit_For
        transformer._ccq_loop_vars = True

    builder = interpreter.InterpreterBuilder
    if not getattr(builder, "_ccq_rounding", False):
        import numpy as np
        import torch
        import triton.language as tl

        cast = builder.cast_impl

        def cast_impl(self, src, dst_type):
            if src.dtype.scalar == tl.float32 and dst_type.scalar == tl.bfloat16:
                rounded = torch.from_numpy(np.array(src.data, dtype=np.float32)).to(torch.bfloat16)  # keeps 0-d
                return interpreter.TensorHandle(rounded.view(torch.int16).numpy().view(np.uint16), dst_type.scalar)
            return cast(self, src, dst_type)

        builder.cast_impl = cast_impl
        builder.create_fp_trunc = lambda self, src, dst_type: self.cast_impl(src, dst_type)
        builder._ccq_rounding = True

    if not getattr(builder, "_ccq_tf32x3", False):
        builder.create_dot = three_tf32_products(builder.create_dot)
        builder._ccq_tf32x3 = True


def three_tf32_products(original):
    """``original`` (the interpreter's ``create_dot``) with ``input_precision="tf32x3"`` dots computed as Triton lowers them for NVIDIA GPUs: each
    fp32 operand split into a TF32 part rounded to nearest (``cvt.rna.tf32.f32``) and the rest, which the tensor core
    truncates to TF32; ``small_a big_b + big_a small_b + big_a big_b`` accumulated in fp32 in that order. Other
    precisions are left as they were."""
    import numpy as np
    from triton._C.libtriton import ir
    from triton.runtime import interpreter

    def rounded(x):
        return ((x.view(np.uint32) + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)

    def truncated(x):
        return (x.view(np.uint32) & np.uint32(0xFFFFE000)).view(np.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        if input_precision != ir.INPUT_PRECISION.TF32x3 or a.data.dtype != np.float32 or b.data.dtype != np.float32:
            return original(self, a, b, d, input_precision, max_num_imprecise_acc)
        big_a, big_b = rounded(a.data), rounded(b.data)
        small_a, small_b = truncated(a.data - big_a), truncated(b.data - big_b)
        out = d.data.astype(np.float32, copy=True)
        for left, right in ((small_a, big_b), (big_a, small_b), (big_a, big_b)):
            out = np.matmul(left, right, dtype=np.float32) + out
        return interpreter.TensorHandle(out.astype(d.data.dtype), d.dtype.scalar)

    return create_dot


@contextlib.contextmanager
def tf32_dots():
    """Every fp32 ``tl.dot`` rounds its inputs to TF32 (10 mantissa bits, round to nearest) as Ampere and
    newer GPUs do by default: the interpreter otherwise multiplies in full fp32 and hides that error."""
    import numpy as np
    from triton.runtime import interpreter

    builder = interpreter.InterpreterBuilder
    original = builder.create_dot

    def to_tf32(data):
        if data.dtype != np.float32:
            return data
        bits = data.view(np.uint32)
        return ((bits + np.uint32(0x1000)) & np.uint32(0xFFFFE000)).view(np.float32)

    def create_dot(self, a, b, d, input_precision, max_num_imprecise_acc):
        rounded_a = interpreter.TensorHandle(to_tf32(a.data), a.dtype)
        rounded_b = interpreter.TensorHandle(to_tf32(b.data), b.dtype)
        return original(self, rounded_a, rounded_b, d, input_precision, max_num_imprecise_acc)

    builder.create_dot = create_dot
    try:
        yield
    finally:
        builder.create_dot = original


@contextlib.contextmanager
def count_kernel_launches():
    """A list that grows by one name per Triton kernel the interpreter runs inside the block."""
    from triton.runtime import interpreter

    launches: list[str] = []
    original = interpreter.InterpretedFunction.run

    def run(self, *args, **kwargs):
        launches.append(getattr(self.fn, "__name__", "?"))
        return original(self, *args, **kwargs)

    interpreter.InterpretedFunction.run = run
    try:
        yield launches
    finally:
        interpreter.InterpretedFunction.run = original
