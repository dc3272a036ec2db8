"""ccq-eval's own Triton kernels (the in-place decoding steps, CCQ's one-kernel step and packed read) compiled for a Hopper GPU
(sm_90, as an H100 or H200 runs them) by the installed Triton, on this machine without one: what the first run on a
GPU would otherwise be the first to find (a construct only the interpreter accepts, a type Triton's compiler
refuses). The interpreter tier checks what they compute."""

from __future__ import annotations

import inspect
import re
import subprocess
from pathlib import Path

import pytest
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

from ccq_eval.ops.gated_deltanet.fused_recurrent import _gdn_step_kernel
from ccq_eval.ops.gla.fused_recurrent import _gla_step_kernel
from ccq_eval.ops.ccq import fused_chunk
from ccq_eval.ops.ccq.fused_chunk import _ccq_fused_chunk_kernel
from ccq_eval.ops.ccq.step import _ccq_step_kernel

HOPPER = GPUTarget("cuda", 90, 32)


def compiled(kernel, types: dict[str, str], constants: dict, **options):
    """The kernel compiled for sm_90 with these argument types and constants."""
    names = list(inspect.signature(kernel.fn).parameters)
    signature = {name: "constexpr" if name in constants else types[name] for name in names}
    source = ASTSource(fn=kernel, signature=signature,
                       constexprs={(names.index(name),): value for name, value in constants.items()})
    return triton.compile(source, target=HOPPER, options=options)


def compiled_ptx(kernel, types: dict[str, str], constants: dict, **options) -> str:
    return compiled(kernel, types, constants, **options).asm["ptx"]


@pytest.mark.parametrize("dtype", ["bf16", "fp32"])
def test_the_gla_step_compiles(dtype):
    ptx = compiled_ptx(_gla_step_kernel, dict(q=f"*{dtype}", k=f"*{dtype}", v=f"*{dtype}", g=f"*{dtype}",
                                              state="*fp32", o=f"*{dtype}", scale="fp32"),
                       dict(H=4, K=256, V=512, BK=256, BV=16))
    assert ".entry _gla_step_kernel" in ptx


@pytest.mark.parametrize("v_first,decay", [(True, True), (False, False)], ids=["gated-deltanet", "deltanet"])
def test_the_delta_rule_step_compiles(v_first, decay):
    ptx = compiled_ptx(_gdn_step_kernel, dict(q="*bf16", k="*bf16", v="*bf16", g="*bf16", beta="*bf16", A_log="*fp32",
                                              dt_bias="*fp32", state="*fp32", o="*bf16", scale="fp32"),
                       dict(H=8, HV=16, K=128, V=256, BK=128, BV=32, L2NORM=True, DECAY=decay, GATE=decay,
                            DT_BIAS=decay, BETA_SIGMOID=True, NEG_EIGVAL=True, V_FIRST=v_first))
    assert ".entry _gdn_step_kernel" in ptx


@pytest.mark.parametrize("trace,norm,lam", [(False, False, 0), (True, False, 0), (False, False, 1), (False, True, 1),
                                            (True, True, 2)], ids=["given", "given-trace", "gla-gate", "gdn-gate",
                                                                   "gdn-fixed-trace"])
def test_the_ccq_step_compiles(trace, norm, lam):
    ptx = compiled_ptx(_ccq_step_kernel, dict(q="*bf16", k="*bf16", lam="*fp32", gate_w="*fp32", gate_b="*fp32",
                                              fixed_lam="fp32", count="*i64", mean="*fp32", cov="*fp32",
                                              old_trace="*fp32", q_out="*bf16", k_out="*bf16", mean_out="*fp32",
                                              count_out="*i64", eps="fp32", norm_eps="fp32"),
                       dict(H=4, D=256, BD=256, BR=16, TRACE=trace, NORM=norm, LAM=lam))
    assert ".entry _ccq_step_kernel" in ptx


PACKED_TYPES = dict(q="*bf16", k="*bf16", lam="*fp32", gate_w="*fp32", gate_b="*fp32", fixed_lam="fp32",
                    cu_seqlens="*i32", count="*i64", mean="*fp32", cov="*fp32", q_out="*bf16", k_out="*bf16",
                    count_out="*i64", mean_out="*fp32", cov_out="*fp32", eps="fp32", norm_eps="fp32")


@pytest.mark.parametrize("D,state,final,trace,norm,lam", [(256, False, True, False, False, 1),
                                                          (256, True, True, True, False, 0),
                                                          (128, True, True, False, True, 1),
                                                          (128, False, False, True, True, 2)],
                         ids=["gla-gate", "gla-given-carried-trace", "gdn-gate-carried", "gdn-fixed-trace-no-final"])
def test_the_ccq_packed_read_compiles(D, state, final, trace, norm, lam):
    ptx = compiled_ptx(_ccq_fused_chunk_kernel, PACKED_TYPES,
                       dict(H=4, D=D, BD=D, BV=fused_chunk.BV, BT=fused_chunk.BT, CENTRE=64, HAS_STATE=state,
                            FINAL=final, TRACE=trace, NORM=norm, LAM=lam), num_warps=fused_chunk.NUM_WARPS)
    assert ".entry _ccq_fused_chunk_kernel" in ptx


def stack_bytes(kernel, types: dict[str, str], constants: dict, tmp_path, **options) -> int:
    """The bytes of local memory (spills) a thread of the kernel compiled for sm_90 keeps, by the cuobjdump that
    ships with Triton."""
    cubin = tmp_path / "kernel.cubin"
    cubin.write_bytes(compiled(kernel, types, constants, **options).asm["cubin"])
    tool = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    usage = subprocess.run([str(tool), "--dump-resource-usage", str(cubin)], capture_output=True, text=True,
                           check=True).stdout
    return int(re.search(r"STACK:(\d+)", usage).group(1))


@pytest.mark.parametrize("D", [256, 128], ids=["gla", "gated-deltanet"])
def test_the_ccq_packed_read_keeps_its_tiles_in_registers(D, tmp_path):
    """The pass's dots on the tensor cores (three TF32 products) leave ptxas room for its tiles: at most 2 KB of
    spills a thread at the 1.3B heads; its dots in IEEE fp32 (CUDA cores) spill 3-6 KB and squeeze it to 32-128
    registers."""
    spilled = stack_bytes(_ccq_fused_chunk_kernel, PACKED_TYPES,
                          dict(H=4, D=D, BD=D, BV=fused_chunk.BV, BT=fused_chunk.BT, CENTRE=64, HAS_STATE=True,
                               FINAL=True, TRACE=True, NORM=True, LAM=1), tmp_path, num_warps=fused_chunk.NUM_WARPS)
    assert spilled <= 2048, spilled
