"""The cost ledger of CCQ's read and of the engine's decoding step: one layer of each paper family at the 1.3B shape
(GLA: hidden 2048, 4 heads, d_k 256; Gated DeltaNet: 8 heads, d_k 128), its CCQ version beside it with the same
weights, in bfloat16 (the GPU check's shapes):

- the prefill as the engine runs it: ``--batch`` prompts of ``--length`` tokens packed into one row (cu_seqlens);
  CCQ's read both ways in one run: before ("CCQ before": composed of torch ops over chunk slots) and now (one pass,
  ops/ccq/fused_chunk.py, priced by its own work, three TF32 products a dot on the tensor cores, and its tensors in
  and out);
- one decoding step at ``--decode-batch`` rows as the engine's fixed slots run it: the layer's step from the slots'
  buffers, the states written in place where the family's step does it (ops/in_place.py), every other new
  state tensor copied home (the copies a CUDA graph of the step replays); CCQ's step both ways in one run: before
  ("CCQ before": Welford's kernel with the gate and Gated DeltaNet's norms launched around it) and now (one kernel);
- torch.profiler over CCQ's read composed of torch ops (the pass's reference), by op, self CPU time here.

Every aten op is counted with its dtype, FLOPs (torch's flop formulas) and bytes moved (its tensors in and out),
grouped by the CUDA kernel it becomes on a GPU; a Triton kernel ccq-eval or fla launches counts once, with its own
tensors in and out. Each kernel is priced at an H200's rates (IEEE fp32 matmuls on CUDA cores, TF32 on tensor cores,
bf16 matmuls at the 796 TFLOP/s and memory at the 4.27 TB/s an H200 measured for this project; elementwise work at
memory bandwidth): an estimate of where a GPU's time goes, where none is at hand to profile. A step's MBU is the
bytes it cannot avoid (the layer's weights, its states read and written once) over its priced time at that bandwidth.

    python benchmarks/ccq_profile.py [--batch 8] [--length 4096] [--decode-batch 64] [--family gla,gated_deltanet] [--device cpu]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections import defaultdict
from pathlib import Path

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves
from torch.utils.flop_counter import flop_registry

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# an H200 SXM: dense fp32 on CUDA cores and TF32 on tensor cores at their peaks; bf16 GEMMs and copies at the rates
# measured on one for this project (gpu_check.py's ceilings)
H200 = {"fp32": 67e12, "tf32": 495e12, "bf16": 796e12, "bytes": 4.27e12}
# a GEMM streams its operands at this fraction of copy bandwidth (skinny GEMMs, M = 64 rows, reach 55-80 % of it)
GEMM_BANDWIDTH = 0.7
# the least a kernel costs: about 2 us on the GPU inside a CUDA graph; about 5 us of host time to launch one eagerly
LAUNCH_FLOOR = {"graph": 2e-6, "eager": 5e-6}
SHAPES = {"gla": dict(hidden=2048, heads=4), "gated_deltanet": dict(hidden=2048, heads=8, head_dim=128)}
MATMULS = {"mm", "bmm", "addmm", "baddbmm"}
SCANS = {"cumsum", "cumsum_"}
VIEWS = {"view", "_unsafe_view", "expand", "transpose", "t", "permute", "slice", "select", "unsqueeze", "squeeze",
         "alias", "detach", "as_strided", "split", "unbind", "diagonal", "split_with_sizes", "lift_fresh",
         "empty", "new_empty", "empty_like", "empty_strided"}  # views and allocations: no kernel, no traffic


def build(family: str, device: str, dtype: torch.dtype):
    """(backbone layer, CCQ layer) of the 1.3B shape with identical weights."""
    import copy

    from ccq_eval.models.ccq_models.gated_deltanet import CCQGatedDeltaNet
    from ccq_eval.models.ccq_models.gla import CCQGatedLinearAttention
    from ccq_eval.models.ccq_read import CCQSettings, attach_ccq

    torch.manual_seed(0)
    shape = SHAPES[family]
    if family == "gla":
        from fla.layers.gla import GatedLinearAttention

        base, ccq_class = GatedLinearAttention(hidden_size=shape["hidden"], num_heads=shape["heads"],
                                               layer_idx=0), CCQGatedLinearAttention
    else:
        from fla.layers.gated_deltanet import GatedDeltaNet

        base, ccq_class = GatedDeltaNet(hidden_size=shape["hidden"], num_heads=shape["heads"],
                                        head_dim=shape["head_dim"], layer_idx=0), CCQGatedDeltaNet
    base = base.to(device=device, dtype=dtype).eval()
    ccq = attach_ccq(copy.deepcopy(base), ccq_class, base.num_heads, base.head_k_dim, CCQSettings())
    return base, ccq.to(device=device, dtype=dtype).eval()


def kernel_of(name: str, dtype: torch.dtype, precision: str) -> str:
    """The CUDA kernel class an aten op becomes on a GPU."""
    if name in MATMULS:
        if dtype == torch.float32:
            return "cuBLAS SGEMM, IEEE fp32 (CUDA cores)" if precision == "highest" else "cuBLAS GEMM, TF32 tensor cores"
        return f"cuBLAS GEMM, {str(dtype).removeprefix('torch.')} tensor cores"
    if name in SCANS:
        return "cub scan (cumsum)"
    if name in {"cat", "constant_pad_nd", "stack", "clone", "copy_", "_to_copy", "contiguous"}:
        return "copies (cat, pad, casts)"
    return "elementwise / reductions"


def price(kernel: str, flops: float, nbytes: float) -> float:
    """Seconds on an H200: the larger of the compute time at peak and the memory time (a GEMM's at GEMM_BANDWIDTH
    of copy bandwidth, the rest at copy bandwidth)."""
    if "IEEE fp32" in kernel:
        rate = H200["fp32"]
    elif "TF32" in kernel:
        rate = H200["tf32"]
    else:
        rate = H200["bf16"]
    bandwidth = H200["bytes"] * (GEMM_BANDWIDTH if "GEMM" in kernel else 1.0)
    return max(flops / rate, nbytes / bandwidth)


def tensor_bytes(*trees) -> int:
    """Bytes of every tensor in the trees, CCQ's statistics (a dataclass) and fla's cache states included."""
    from ccq_eval.generation.cache_rows import leaves

    return sum(t.numel() * t.element_size() for leaf in tree_leaves(trees) for t in leaves(leaf))


class OpLedger(TorchDispatchMode):
    """Every aten op under it: kernel class, FLOPs, bytes in and out, and CPU seconds. Inside one of fla's
    functions (``inside``), its ops count as that one kernel: FLOPs summed, bytes only its own in and out."""

    def __init__(self):
        super().__init__()
        self.rows = defaultdict(lambda: {"ops": 0, "flops": 0.0, "bytes": 0.0, "seconds": 0.0, "h200": 0.0,
                                         "h200_graph": 0.0})
        self.fla_flops: float | None = None
        self.skip_matmuls = False  # matmuls priced from their shapes, their outputs zeros (a whole model's prefill)

    def add(self, kernel: str, flops: float, nbytes: float, seconds: float) -> None:
        row = self.rows[kernel]
        row["ops"] += 1
        row["flops"] += flops
        row["bytes"] += nbytes
        row["seconds"] += seconds
        row["h200"] += price(kernel, flops, nbytes)
        row["h200_graph"] += max(price(kernel, flops, nbytes), LAUNCH_FLOOR["graph"])  # replayed in a CUDA graph

    def inside(self, name: str, function, flops_of=None):
        """``function`` counted as one kernel: its ops' FLOPs summed, or ``flops_of(*args, **kwargs)`` where the
        kernel's own work differs from its stand-in's (a fused pass priced by what it computes)."""
        def scoped(*args, **kwargs):
            if self.fla_flops is not None:  # nested in another fla function: part of that kernel
                return function(*args, **kwargs)
            self.fla_flops, start = 0.0, time.perf_counter()
            try:
                out = function(*args, **kwargs)
            finally:
                flops, self.fla_flops = self.fla_flops, None
            if flops_of is not None:
                flops = flops_of(*args, **kwargs)
            label = name if name.startswith("ccq-eval") else f"fla Triton kernel ({name})"
            self.add(label, flops, tensor_bytes(args, kwargs, out), time.perf_counter() - start)
            return out
        return scoped

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        start = time.perf_counter()
        name = func._overloadpacket.__name__
        out = self._shaped(func, args, kwargs) if self.skip_matmuls and name in MATMULS else func(*args, **kwargs)
        seconds = time.perf_counter() - start
        formula = flop_registry.get(func._overloadpacket)
        flops = formula(*args, **kwargs, out_val=out) if formula else 0
        if self.fla_flops is not None:
            self.fla_flops += flops
        elif name not in VIEWS:
            dtype = next((t.dtype for t in tree_leaves((args, out)) if isinstance(t, torch.Tensor)), torch.float32)
            self.add(kernel_of(name, dtype, torch.get_float32_matmul_precision()), flops,
                     tensor_bytes(args, kwargs, out), seconds)
        return out


def _shaped(func, args, kwargs):
    """A matmul's output of the right shape, dtype and device, zeros, without computing it (its cost is priced from
    the shapes alone; nothing downstream branches on its values)."""
    from torch.utils._pytree import tree_map

    meta = tree_map(lambda t: t.to("meta") if isinstance(t, torch.Tensor) else t, (args, kwargs))
    shape = func(*meta[0], **meta[1])
    device = next(t.device for t in tree_leaves((args, kwargs)) if isinstance(t, torch.Tensor))
    if func._overloadpacket.__name__.endswith("_"):  # in place: the first argument is the output
        return args[0].zero_()
    return torch.zeros(shape.shape, dtype=shape.dtype, device=device)


OpLedger._shaped = staticmethod(_shaped)


@contextlib.contextmanager
def fla_functions_scoped(book: OpLedger):
    """fla's functions that the CPU backend replaces, each counted as the one kernel it is on a GPU."""
    from ccq_eval.ops.cpu_forms import _resolve, _set, patches

    saved = []
    for patch in patches():
        if "[" in patch.symbol or "." in patch.symbol:  # dict entries and methods: norms' and losses' internals
            continue
        container, key, current = _resolve(patch)
        if current is not None:
            saved.append((container, key, current))
            _set(container, key, book.inside(key, current))
    try:
        yield
    finally:
        for container, key, current in saved:
            _set(container, key, current)


@contextlib.contextmanager
def gpu_forms(fp32_mode: str):
    """CCQ's read as it runs on CUDA: the chunk states by one cumsum (the CPU loops), packed sequences in a GPU's
    blocks, fp32 matmuls in fp32_mode."""
    from ccq_eval.ops import fp32_matmul
    from ccq_eval.ops.ccq import chunk, packed

    entering, mode, block = chunk.entering_states, fp32_matmul.MODE, packed.packed_block_tokens
    chunk.entering_states = lambda p0, outer, loop: entering(p0, outer, loop=False)
    fp32_matmul.MODE = fp32_mode
    packed.packed_block_tokens = lambda device: packed.PACKED_BLOCK_TOKENS  # packed sequences in a GPU's blocks
    try:
        yield
    finally:
        chunk.entering_states, fp32_matmul.MODE, packed.packed_block_tokens = entering, mode, block


def ledger(layer, x, fp32_mode: str = "ieee", cu_seqlens=None, ccq_read_form: str = "fused") -> dict:
    book = OpLedger()
    with torch.no_grad(), gpu_forms(fp32_mode), ccq_read_as(book, ccq_read_form), fla_functions_scoped(book), book:
        layer(x, cu_seqlens=cu_seqlens) if cu_seqlens is not None else layer(x)
    return dict(book.rows)


def packed(batch: int, length: int, device: str) -> torch.Tensor:
    """cu_seqlens of ``batch`` prompts of ``length`` tokens in one row, as the engine packs a prefill."""
    return torch.arange(0, (batch + 1) * length, length, device=device)


@contextlib.contextmanager
def engine_kernels(book: OpLedger, family: str, ccq_step: str = "fused", ccq_read_form: str = "fused"):
    """What the engine runs on a GPU, each counted as the one kernel it is there: the family's in-place decoding
    step, CCQ's step and CCQ's packed read. ``ccq_step``: "fused", the layer's whole step in one kernel (the gate,
    Gated DeltaNet's L2 norms and the count folded in: ``contract_read_step``); "separate", the step as it was before
    that, Welford's kernel alone with the norms and the gate launched around it as torch ops (priced beside it in
    one run). ``ccq_read_form``: "fused", the packed read as one pass (``contract_read``); "composed", as it was
    before, the torch composition over chunk slots, op by op. A checkout without them runs fla's step and CCQ's
    torch ops."""
    try:
        from ccq_eval.families import backbone
        from ccq_eval.models import ccq_read
        from ccq_eval.ops.ccq import step
        from ccq_eval.ops.ccq.step import contract_query_step_fused  # noqa: F401 - present in this checkout
        from ccq_eval.ops.in_place import routes_written_in_place
    except ImportError:
        yield
        return
    if not hasattr(ccq_read, "contract_read_step"):  # an older checkout: the Welford kernel is all there is
        name, replacement = "contract_query_step", book.inside("ccq-eval Triton kernel (CCQ step)",
                                                               ccq_read.contract_query_step)
    elif ccq_step == "fused":
        name, replacement = "contract_read_step", book.inside("ccq-eval Triton kernel (CCQ step)",
                                                              ccq_read.contract_read_step)
    else:
        welford = book.inside("ccq-eval Triton kernel (CCQ step)", step.contract_query_step)

        def separate(q, k, gate, state, sigma_scale="none", normalize=False, read_dtype=None):
            if normalize:
                q, k = step.normalized(q, k, read_dtype or q.dtype)
            q_clean, new = welford(q, k, gate.lam(q), state, sigma_scale)
            return q_clean, k, new

        name, replacement = "contract_read_step", separate
    original = getattr(ccq_read, name)
    setattr(ccq_read, name, replacement)
    try:
        with routes_written_in_place(backbone(family).in_place_steps), ccq_read_as(book, ccq_read_form):
            yield
    finally:
        setattr(ccq_read, name, original)


@contextlib.contextmanager
def ccq_read_as(book: OpLedger, form: str):
    """CCQ's packed read "fused" (one pass, as a GPU runs it: ``fused_read_priced``) or "composed" (the torch
    composition it replaced, op by op); a checkout without the pass has only the composition."""
    from ccq_eval.models import ccq_read

    original = getattr(ccq_read, "contract_read", None)
    if original is None or form == "composed":
        yield
        return
    ccq_read.contract_read = fused_read_priced(book)
    try:
        yield
    finally:
        ccq_read.contract_read = original


def fused_read_priced(book: OpLedger):
    """CCQ's packed read as the one Triton pass a GPU runs (ops/ccq/fused_chunk.py): its torch form computes the
    result here, counted as one kernel whose work is the pass's own (each dot three TF32 products on the tensor
    cores, fused_chunk.DOT) and whose bytes are its tensors in and out."""
    from ccq_eval.ops.ccq.fused_chunk import DOT, fused_read_flops
    from ccq_eval.ops.ccq.read import reference_read

    def flops(q, *args, **kwargs):
        B, T, H, D = q.shape
        return fused_read_flops(B * T, H, D) * (3 if DOT.value == "tf32x3" else 1)

    rate = {"tf32x3": "3xTF32 dots", "tf32": "TF32 dots", "ieee": "IEEE fp32 dots"}[DOT.value]
    return book.inside(f"ccq-eval Triton kernel (CCQ packed read, {rate})", reference_read, flops)


def step_ledger(layer, family: str, batch: int, hidden: int, device: str, dtype: torch.dtype,
                ccq_step: str = "fused") -> tuple[dict, int]:
    """One decoding step of the layer at ``batch`` rows (after a short prefill) as the engine's fixed slots run it,
    by kernel class, and the bytes it cannot avoid (weights, and every state read and written once)."""
    from fla.models.cache_utils import Cache

    from ccq_eval.generation.cache_rows import cache_leaves

    cache = Cache()
    with torch.no_grad():
        layer(torch.randn(batch, 16, hidden, device=device, dtype=dtype), past_key_values=cache, use_cache=True)
    buffers = cache_leaves(cache)
    x = torch.randn(batch, 1, hidden, device=device, dtype=dtype)
    book = OpLedger()
    with torch.no_grad(), gpu_forms("ieee"), engine_kernels(book, family, ccq_step), fla_functions_scoped(book), book:
        layer(x, past_key_values=cache, use_cache=True)
        for buffer, new in zip(buffers, cache_leaves(cache), strict=True):  # home, into the slots' buffers
            if new.data_ptr() != buffer.data_ptr():
                buffer.copy_(new)
    weights = sum(p.numel() * p.element_size() for p in layer.parameters())
    return dict(book.rows), weights + 2 * tensor_bytes(buffers)


def print_books(books: dict[str, dict], floors: dict[str, int] | None = None) -> dict[str, float]:
    """The books side by side; each one's H200 estimate (seconds), with its ratio to the backbone's, its launches and,
    where ``floors`` gives the bytes it cannot avoid, its MBU."""
    print("  by CUDA kernel class: ops (launches), GFLOP, GB moved, CPU ms here, H200 ms (estimate)")
    for kernel in sorted(set().union(*books.values())):
        for name, book in books.items():
            r = book.get(kernel)
            if r:
                print(f"  {kernel:44s} {name:10s} {r['ops']:5d} {r['flops'] / 1e9:9.2f} {r['bytes'] / 1e9:8.3f} "
                      f"{r['seconds'] * 1e3:9.1f} {r['h200'] * 1e3:8.3f}")
    totals = {name: sum(r["h200"] for r in book.values()) for name, book in books.items()}
    launches = {name: sum(r["ops"] for r in book.values()) for name, book in books.items()}
    mbu = {name: floors[name] / H200["bytes"] / totals[name] for name in floors} if floors else {}
    print("  total, H200 estimate: " + ", ".join(
        f"{name} {ms * 1e3:.3f} ms ({ms / totals['backbone']:.2f}x, {launches[name]} launches"
        + (f", MBU {mbu[name]:.2f}" if name in mbu else "") + ")"
        for name, ms in totals.items()))
    return totals


def read_inputs(ccq, x, cu_seqlens) -> tuple:
    """The (q, k, lam) the CCQ layer hands its read, caught in one packed forward."""
    from ccq_eval.models import ccq_read

    from ccq_eval.ops.ccq.step import normalized

    caught, original = [], ccq_read.contract_read

    def catching(q, k, gate, *args, **kw):
        if kw.get("normalize"):
            q, k = normalized(q, k, kw.get("read_dtype") or q.dtype)
        caught.append((q, k, gate.lam(q)))
        return original(q, k, gate, *args, **kw)

    ccq_read.contract_read = catching
    try:
        with torch.no_grad():
            ccq(x, cu_seqlens=cu_seqlens)
    finally:
        ccq_read.contract_read = original
    return caught[0]


def read_profile(ccq, x, cu_seqlens, top: int) -> list[tuple[str, int, float]]:
    """torch.profiler over CCQ's packed read composed of torch ops (the one pass's reference), in the GPU's forms:
    (op, calls, self CPU ms), the costliest first."""
    from torch.profiler import ProfilerActivity, profile

    from ccq_eval.ops.ccq import contract_query

    q, k, lam = read_inputs(ccq, x, cu_seqlens)
    with torch.no_grad(), gpu_forms("ieee"), profile(activities=[ProfilerActivity.CPU]) as prof:
        contract_query(q, k, lam, cu_seqlens=cu_seqlens)
    events = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)
    return [(e.key, e.count, e.self_cpu_time_total / 1e3) for e in events[:top]]


def report(family: str, batch: int, length: int, decode_batch: int, device: str, dtype: torch.dtype,
           top: int) -> None:
    if device == "cpu":
        from ccq_eval.ops.cpu_forms import install_cpu_backend

        install_cpu_backend()
    base, ccq = build(family, device, dtype)
    x = torch.randn(1, batch * length, SHAPES[family]["hidden"], device=device, dtype=dtype)
    cu = packed(batch, length, device)
    with torch.no_grad():
        base(x, cu_seqlens=cu), ccq(x, cu_seqlens=cu)  # warm-up
    print(f"\n## {family}: one layer, {batch} x {length} tokens, {dtype}")
    print("\ntorch.profiler over CCQ's packed read composed of torch ops (the one pass's reference), self CPU ms here:")
    for op, calls, ms in read_profile(ccq, x, cu, top):
        print(f"  {op:28s} {calls:5d} calls {ms:9.1f}")
    print(f"\nprefill, {batch} x {length}, packed into one row (CCQ before: its read composed of torch ops; CCQ: "
          f"one pass):")
    print_books({"backbone": ledger(base, x, cu_seqlens=cu),
                 "CCQ before": ledger(ccq, x, cu_seqlens=cu, ccq_read_form="composed"),
                 "CCQ": ledger(ccq, x, cu_seqlens=cu)})
    hidden = SHAPES[family]["hidden"]
    print(f"\none decoding step, {decode_batch} rows, as the engine's fixed slots run it:")
    steps = {name: step_ledger(layer, family, decode_batch, hidden, device, dtype, form)
             for name, layer, form in (("backbone", base, "fused"), ("CCQ before", ccq, "separate"),
                                       ("CCQ", ccq, "fused"))}
    print_books({name: book for name, (book, _) in steps.items()}, {name: floor for name, (_, floor) in steps.items()})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--decode-batch", type=int, default=64)
    parser.add_argument("--family", default="gla,gated_deltanet")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="bfloat16", help="the model's dtype, as a GPU runs it (CCQ's statistics "
                        "are float32 whatever it is)")
    parser.add_argument("--top", type=int, default=12)
    args = parser.parse_args()
    for family in args.family.split(","):
        report(family, args.batch, args.length, args.decode_batch, args.device, getattr(torch, args.dtype), args.top)
    return 0


if __name__ == "__main__":
    sys.exit(main())
