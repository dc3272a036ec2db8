"""Peak memory of CCQ's packed prefill, measured with torch's memory profiler on this CPU: one layer of each paper
family at the 1.3B shape (benchmarks/ccq_profile.py's layers), in bfloat16, prompts packed into one row (cu_seqlens)
as the engine packs a prefill; side by side in one run:

- the layer's peak, backbone and CCQ (the same weights), above what was live before the call;
- CCQ's packed read alone (contract_query), in a GPU's forms (blocks of 16K tokens' chunk slots): its peak in units of
  k's own size, at twice and four times the batch, and its growth per token (what it adds at any length: the contracted queries, in q's
  dtype) beside its fixed part (one block's working set: the slots' D x D statistics);
- both priced at 64 x 32K, the backbone's peak scaled per token from the CPU layer (an estimate: fla's GPU kernels
  keep other temporaries than the CPU backend's forms), and beside them the one pass a GPU runs without gradients,
  which allocates its outputs alone.

The target: CCQ's peak at most the backbone's, plus its statistics, plus 10 %.

    python benchmarks/ccq_memory.py [--family gla,gated_deltanet] [--batch 8] [--length 2048]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import ccq_profile as profile  # noqa: E402 - the ledger's layers, read inputs and GPU forms

PRICED = (64, 32768)  # batch x length the ledger prices
TARGET = 0.10


def peak_bytes(fn) -> int:
    """The largest sum of bytes allocated (less freed) during ``fn``, from torch's memory profiler: each op's own
    allocations and frees, in the order the ops started."""
    activities = [torch.profiler.ProfilerActivity.CPU]
    with torch.profiler.profile(activities=activities, profile_memory=True) as prof:
        fn()
    changes = sorted((e.time_range.start, e.cpu_memory_usage if e.name == "[memory]" else e.self_cpu_memory_usage)
                     for e in prof.events())
    running = peak = 0
    for _, change in changes:
        running += change
        peak = max(peak, running)
    return peak


def statistics_bytes(layer, sequences: int) -> int:
    """CCQ's carried statistics: a D x D covariance and a mean a head, float32, and a count, per sequence."""
    H, D = layer.num_heads, layer.head_k_dim
    return sequences * (H * (D * D + D) * 4 + 8)


def report(family: str, batch: int, length: int) -> None:
    from ccq_eval.ops.ccq import contract_query

    base, ccq = profile.build(family, "cpu", torch.bfloat16)
    hidden = profile.SHAPES[family]["hidden"]
    x = torch.randn(1, batch * length, hidden, dtype=torch.bfloat16)
    cu = profile.packed(batch, length, "cpu")
    with torch.no_grad():
        base(x, cu_seqlens=cu), ccq(x, cu_seqlens=cu)  # warm-up
        backbone_peak = peak_bytes(lambda: base(x, cu_seqlens=cu))
        ccq_peak = peak_bytes(lambda: ccq(x, cu_seqlens=cu))
    stats = statistics_bytes(ccq, batch)
    over = (ccq_peak - backbone_peak - stats) / backbone_peak
    print(f"\n## {family}: one layer, {batch} x {length} tokens packed, bfloat16, this CPU's forms")
    print(f"  layer peak: backbone {backbone_peak / 1e6:.1f} MB, CCQ {ccq_peak / 1e6:.1f} MB, statistics "
          f"{stats / 1e6:.1f} MB: CCQ - backbone - statistics = {100 * over:+.1f} % of the backbone's peak "
          f"(target <= {100 * TARGET:.0f} %)")
    reads = {}
    for rows in (2 * batch, 4 * batch):  # two or more blocks each: the growth past the first block
        xs = torch.randn(1, rows * length, hidden, dtype=torch.bfloat16)
        cus = profile.packed(rows, length, "cpu")
        q, k, lam = profile.read_inputs(ccq, xs, cus)
        with torch.no_grad(), profile.gpu_forms("ieee"):
            reads[q.shape[1]] = (peak_bytes(lambda: contract_query(q, k, lam, cu_seqlens=cus, output_final_state=True)),
                                 k.numel() * k.element_size())
    (t1, (p1, k1)), (t2, (p2, k2)) = sorted(reads.items())
    per_token = (p2 - p1) / (t2 - t1)
    fixed = p1 - per_token * t1
    print(f"  CCQ's packed read alone, a GPU's forms: {p1 / 1e6:.0f} MB at {t1} tokens ({p1 / k1:.1f} |k|), "
          f"{p2 / 1e6:.0f} MB at {t2} ({p2 / k2:.1f} |k|): {per_token / (k1 / t1):.2f} |k| a token more, "
          f"{fixed / 1e6:.0f} MB fixed (one block's slots)")
    tokens = PRICED[0] * PRICED[1]
    backbone_priced = backbone_peak / (batch * length) * tokens
    added = per_token * tokens + fixed + statistics_bytes(ccq, PRICED[0])
    print(f"  priced at {PRICED[0]} x {PRICED[1] // 1024}K (estimate): backbone peak {backbone_priced / 1e9:.0f} GB "
          f"(this CPU's forms, per token), CCQ's read adds {added / 1e9:.1f} GB = {100 * added / backbone_priced:.1f} %")
    # the one pass a GPU runs (ops/ccq/fused_chunk.py) allocates its outputs alone (counted under the interpreter in
    # tests/interpreter/test_ccq_fused_read.py): q' in q's dtype, Gated DeltaNet's normalised k, the statistics
    outputs = (1 + (family == "gated_deltanet")) * k1 / t1 * tokens + statistics_bytes(ccq, PRICED[0])
    print(f"  the one pass (a GPU's path without gradients) adds its outputs alone: {outputs / 1e9:.1f} GB = "
          f"{100 * outputs / backbone_priced:.1f} % at {PRICED[0]} x {PRICED[1] // 1024}K")


def main() -> int:
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--family", default="gla,gated_deltanet")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=2048)
    args = parser.parse_args()
    install_cpu_backend()
    for family in args.family.split(","):
        report(family, args.batch, args.length)
    return 0


if __name__ == "__main__":
    sys.exit(main())
