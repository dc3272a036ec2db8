"""Transformer cached decoding: fla's torch.cat appends (a copy of the whole KV cache every step) against
the growing cache (models/kv_cache.py), side by side in one process on the zoo's Transformer shape.

    python benchmarks/decode_cache.py [--prefill 4096] [--steps 128] [--repeats 5] [--batch 1]

Prints the median wall time of `--steps` greedy steps after a prefill of `--prefill` tokens, for both,
their ratio, and whether both produced the same tokens.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def decode(model, ids, steps):
    with torch.no_grad():
        out = model(ids, use_cache=True)
        cache, token, tokens = out.past_key_values, out.logits[:, -1:].argmax(-1), []
        start = time.perf_counter()
        for _ in range(steps):
            out = model(token, past_key_values=cache, use_cache=True)
            cache, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
            tokens.append(token)
        return time.perf_counter() - start, torch.cat(tokens, 1)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prefill", type=int, default=4096)
    parser.add_argument("--steps", type=int, default=128)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch", type=int, default=1)
    args = parser.parse_args()

    import fla.models.cache_utils as cache_utils
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models import kv_cache
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    torch.manual_seed(0)
    config = AutoConfig.for_model("transformer", hidden_size=128, num_hidden_layers=2, num_heads=4, vocab_size=260,
                                  max_position_embeddings=args.prefill + args.steps + 1)
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 256, (args.batch, args.prefill))
    kv_cache.install_growing_kv_cache()
    variants = {"fla torch.cat": kv_cache._ORIGINAL, "growing cache": kv_cache.update_attention_cache}
    times = {name: [] for name in variants}
    outputs = {}
    for _ in range(args.repeats):  # alternated, so drift in machine load hits both alike
        for name, fn in variants.items():
            cache_utils.update_attention_cache = fn
            seconds, outputs[name] = decode(model, ids, args.steps)
            times[name].append(seconds)
    cache_utils.update_attention_cache = kv_cache.update_attention_cache
    old, new = (statistics.median(times[n]) for n in variants)
    print(f"prefill {args.prefill}, {args.steps} steps, batch {args.batch}, medians of {args.repeats}")
    for name in variants:
        print(f"  {name:<14} {statistics.median(times[name]):8.3f} s  "
              f"({1000 * statistics.median(times[name]) / args.steps:.2f} ms/step)")
    print(f"  ratio old/new {old / new:.2f}x; same tokens: {torch.equal(*outputs.values())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
