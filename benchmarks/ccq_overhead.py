"""What CCQ costs on top of its backbone layer, on this machine's fastest path (the torch CPU backend,
or fla's kernels on CUDA): forward time side by side, forward peak memory (a fresh subprocess per
configuration, since a process's peak RSS never goes down) and the decoding state's size.

Targets (issue 2): CCQ adds <= 25% forward time at 8K; decoding state constant in T; forward peak
memory <= 1.3x the backbone's.

    python benchmarks/ccq_overhead.py [--lengths 2048,8192,20480] [--repeats 5] [--device cpu]
"""

from __future__ import annotations

import argparse
import copy
import json
import statistics
import subprocess
import sys
import time
import warnings

import torch

warnings.filterwarnings("ignore")

HIDDEN, HEADS = 512, 4  # head_k_dim 64 for both backbones, as in the paper's 1.3B GLA per-head width


def build_layers(family: str, device: str, dtype: torch.dtype):
    """(backbone layer, CCQ layer) with identical weights."""
    from ccq_eval.models.ccq_models.gated_deltanet import CCQGatedDeltaNet
    from ccq_eval.models.ccq_models.gla import CCQGatedLinearAttention
    from ccq_eval.models.ccq_read import CCQSettings, attach_ccq

    torch.manual_seed(0)
    if family == "gla":
        from fla.layers.gla import GatedLinearAttention

        base = GatedLinearAttention(hidden_size=HIDDEN, num_heads=HEADS, layer_idx=0)
        ccq_class = CCQGatedLinearAttention
    else:
        from fla.layers.gated_deltanet import GatedDeltaNet

        base = GatedDeltaNet(hidden_size=HIDDEN, num_heads=HEADS, head_dim=64, expand_v=2, layer_idx=0)
        ccq_class = CCQGatedDeltaNet
    base = base.to(device=device, dtype=dtype).eval()
    ccq = attach_ccq(copy.deepcopy(base), ccq_class, base.num_heads, base.head_k_dim, CCQSettings())
    ccq = ccq.to(device=device, dtype=dtype).eval()
    return base, ccq


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def time_forward(family: str, T: int, repeats: int, device: str, dtype: torch.dtype) -> dict:
    base, ccq = build_layers(family, device, dtype)
    x = torch.randn(1, T, HIDDEN, device=device, dtype=dtype)
    times = {"backbone": [], "ccq": []}
    with torch.no_grad():
        base(x), ccq(x)  # warm-up
        for _ in range(repeats):  # interleaved, so drift on a noisy machine hits both alike
            for name, layer in (("backbone", base), ("ccq", ccq)):
                _sync(device)
                start = time.perf_counter()
                layer(x)
                _sync(device)
                times[name].append(time.perf_counter() - start)
    med = {name: statistics.median(values) for name, values in times.items()}
    return {"backbone_s": med["backbone"], "ccq_s": med["ccq"], "ratio": med["ccq"] / med["backbone"]}


def decoding_state_bytes(family: str, T: int, device: str, dtype: torch.dtype) -> int:
    """Bytes of the CCQ statistics in the layer cache after prefilling T tokens and decoding one."""
    from fla.models.cache_utils import Cache

    _, ccq = build_layers(family, device, dtype)
    cache = Cache()
    with torch.no_grad():
        ccq(torch.randn(1, T, HIDDEN, device=device, dtype=dtype), past_key_values=cache, use_cache=True)
        ccq(torch.randn(1, 1, HIDDEN, device=device, dtype=dtype), past_key_values=cache, use_cache=True)
    _, state = cache[0]["recurrent_state"]
    return sum(t.numel() * t.element_size() for t in (state.count, state.mean, state.cov))


def child_peak_memory(family: str, which: str, T: int, device: str, dtype_name: str) -> dict:
    """Runs in a fresh process: peak memory of one forward, above what the process held before it."""
    dtype = getattr(torch, dtype_name)
    base, ccq = build_layers(family, device, dtype)
    layer = base if which == "backbone" else ccq
    x = torch.randn(1, T, HIDDEN, device=device, dtype=dtype)
    with torch.no_grad():
        if device.startswith("cuda"):
            torch.cuda.synchronize()
            before = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            layer(x)
            torch.cuda.synchronize()
            return {"peak_bytes": torch.cuda.max_memory_allocated() - before}
        before = _proc_status("VmRSS")
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")  # reset the peak-RSS high-water mark (VmHWM)
        layer(x)
        return {"peak_bytes": _proc_status("VmHWM") - before}


def _proc_status(field: str) -> int:
    with open("/proc/self/status") as handle:
        for line in handle:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise RuntimeError(f"/proc/self/status has no {field}")


def peak_memory(family: str, which: str, T: int, device: str, dtype_name: str) -> int:
    out = subprocess.run([sys.executable, __file__, "--child", family, which, str(T), device, dtype_name],
                         check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default="2048,8192,20480")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--dtype", default="float32")
    parser.add_argument("--families", default="gla,gated_deltanet")
    parser.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.device == "cpu":
        from ccq_eval.ops.cpu_forms import install_cpu_backend

        install_cpu_backend()
    if args.child:
        family, which, T, device, dtype_name = args.child
        print(json.dumps(child_peak_memory(family, which, int(T), device, dtype_name)))
        return
    dtype = getattr(torch, args.dtype)
    lengths = [int(x) for x in args.lengths.split(",")]
    print(f"device={args.device} dtype={args.dtype} hidden={HIDDEN} heads={HEADS} head_k_dim=64 "
          f"threads={torch.get_num_threads()} repeats={args.repeats} (medians)")
    print(f"{'layer':<16}{'T':>7}{'backbone s':>12}{'CCQ s':>10}{'time x':>8}{'bb peak MB':>12}"
          f"{'CCQ peak MB':>13}{'mem x':>7}{'state B':>10}")
    for family in args.families.split(","):
        for T in lengths:
            timing = time_forward(family, T, args.repeats, args.device, dtype)
            mem_b = peak_memory(family, "backbone", T, args.device, args.dtype)
            mem_c = peak_memory(family, "ccq", T, args.device, args.dtype)
            state = decoding_state_bytes(family, T, args.device, dtype)
            print(f"{family:<16}{T:>7}{timing['backbone_s']:>12.3f}{timing['ccq_s']:>10.3f}{timing['ratio']:>8.2f}"
                  f"{mem_b / 2**20:>12.1f}{mem_c / 2**20:>13.1f}{mem_c / mem_b:>7.2f}{state:>10}", flush=True)


if __name__ == "__main__":
    main()
