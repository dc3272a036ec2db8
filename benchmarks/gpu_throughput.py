"""Prefill and decode throughput of 1.3B-shaped, randomly initialised models of every family the harness loads
(GLA, GDN, DeltaNet, RetNet, HGRN2 and their CCQ families, Mamba, Mamba2, Samba, a GDN hybrid, Transformer++,
Llama) on one GPU in bf16, with each CCQ family's ratio to its backbone. `--models` narrows it (the paper's
five: gla,ccq_gla,gated_deltanet,ccq_gated_deltanet,transformer); `--dry-run` runs the same code on CPU at toy
sizes (checks the script, measures nothing).

    python benchmarks/gpu_throughput.py [--batch 8] [--prefill 4096] [--decode 256] [--repeats 5] [--out F.json]
    python benchmarks/gpu_throughput.py --dry-run

Output format (fixed, so runs can be compared later): one line per measurement,

    RESULT model=<name> phase=<prefill|decode> batch=<B> tokens=<T> median_s=<s> tokens_per_s=<x>
    RATIO model=<ccq name> backbone=<name> phase=<phase> throughput_ratio=<ccq / backbone>

and the same records as JSON (--out). Medians over --repeats timed runs after one warm-up; CUDA is
synchronised around every timed region (CUDA events). The timing is the efficiency suite's
(ccq_eval/suites/efficiency/measure.py): prefill, one forward over B x T tokens with the cache on; decode,
`--decode` single-token steps with the model's cache after that prefill (the prefill not counted in it).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import warnings
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# ~1.3B parameters: the GLA paper's 1.3B shape (hidden 2048, 24 layers; 48 for the Mambas, as their 1.3-1.4B
# models have) for every family the harness loads
HIDDEN = dict(hidden_size=2048, vocab_size=32000)
WINDOW = {"layers": list(range(1, 24, 2)), "num_heads": 16, "num_kv_heads": 16, "window_size": 2048}
SHAPES = {
    "gla": dict(HIDDEN, num_hidden_layers=24, num_heads=4),
    "gated_deltanet": dict(HIDDEN, num_hidden_layers=24, num_heads=8, head_dim=128),
    "delta_net": dict(HIDDEN, num_hidden_layers=24, num_heads=16),
    "retnet": dict(HIDDEN, num_hidden_layers=24, num_heads=8),
    "hgrn2": dict(HIDDEN, num_hidden_layers=24, expand_ratio=128),
    "mamba": dict(HIDDEN, num_hidden_layers=48, state_size=16),
    "mamba2": dict(HIDDEN, num_hidden_layers=48, num_heads=64, head_dim=64, state_size=128, n_groups=1),
    "samba": dict(HIDDEN, num_hidden_layers=24, state_size=16, attn=WINDOW),
    "gdn_hybrid": dict(HIDDEN, num_hidden_layers=24, num_heads=8, head_dim=128,
                       attn={**WINDOW, "layers": list(range(3, 24, 4))}),
    "transformer": dict(HIDDEN, num_hidden_layers=24, num_heads=16),
    "llama": dict(HIDDEN, num_hidden_layers=24, num_attention_heads=16, num_key_value_heads=16, intermediate_size=5632),
}
TOY_WINDOW = {"layers": [1], "num_heads": 2, "num_kv_heads": 2, "window_size": 48}
TOY_SIZE = dict(hidden_size=64, num_hidden_layers=2, vocab_size=260)
TOY = {"gla": dict(TOY_SIZE, num_heads=2), "gated_deltanet": dict(TOY_SIZE, num_heads=2, head_dim=32),
       "delta_net": dict(TOY_SIZE, num_heads=2), "retnet": dict(TOY_SIZE, num_heads=2),
       "hgrn2": dict(TOY_SIZE, expand_ratio=32), "mamba": dict(TOY_SIZE, state_size=8),
       "mamba2": dict(TOY_SIZE, num_heads=4, head_dim=32, state_size=16, n_groups=1, chunk_size=32),
       "samba": dict(TOY_SIZE, state_size=8, attn=TOY_WINDOW),
       "gdn_hybrid": dict(TOY_SIZE, num_heads=2, head_dim=32, attn=TOY_WINDOW),
       "transformer": dict(TOY_SIZE, num_heads=2),
       "llama": dict(TOY_SIZE, num_attention_heads=2, num_key_value_heads=1, intermediate_size=128)}
# name -> (model_type, shape); each CCQ family right after its backbone (the RATIO lines pair them)
MODELS = {"gla": ("gla", "gla"), "ccq_gla": ("ccq_gla", "gla"),
          "gated_deltanet": ("gated_deltanet", "gated_deltanet"),
          "ccq_gated_deltanet": ("ccq_gated_deltanet", "gated_deltanet"),
          "delta_net": ("delta_net", "delta_net"), "ccq_delta_net": ("ccq_delta_net", "delta_net"),
          "retnet": ("retnet", "retnet"), "ccq_retnet": ("ccq_retnet", "retnet"),
          "hgrn2": ("hgrn2", "hgrn2"), "ccq_hgrn2": ("ccq_hgrn2", "hgrn2"),
          "mamba": ("mamba", "mamba"), "mamba2": ("mamba2", "mamba2"), "samba": ("samba", "samba"),
          "gdn_hybrid": ("gated_deltanet", "gdn_hybrid"), "transformer": ("transformer", "transformer"),
          "llama": ("llama", "llama")}
PAPER = "gla,ccq_gla,gated_deltanet,ccq_gated_deltanet,transformer"  # the five the paper compares


def build(name: str, shapes: dict, device: str, dtype: torch.dtype):
    from ccq_eval.models.registration import register_ccq_models
    from transformers import AutoConfig, AutoModelForCausalLM

    register_ccq_models()
    torch.manual_seed(0)
    model_type, shape = MODELS[name]
    config = AutoConfig.for_model(model_type, **shapes[shape], fuse_cross_entropy=False)
    return AutoModelForCausalLM.from_config(config).to(device=device, dtype=dtype).eval()


def measure(model, batch: int, prefill: int, decode: int, device: str, repeats: int, vocab: int) -> dict:
    """The efficiency suite's measurement (one code path for the numbers): one warm-up, then `repeats` runs of
    a prefill of B x T tokens and `decode` steps from its cache; medians."""
    from ccq_eval.suites.efficiency.measure import measure_once

    ids = torch.randint(0, vocab, (batch, prefill), device=device)
    measure_once(model, ids, decode)  # warm-up: kernels compiled and autotuned outside the timed runs
    runs = [measure_once(model, ids, decode) for _ in range(repeats)]
    return {"prefill": (statistics.median(r.prefill_s for r in runs), batch * prefill),
            "decode": (statistics.median(r.decode_s for r in runs), batch * decode)}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", default=",".join(MODELS),
                        help=f"comma list (default: every family; the paper's five: {PAPER})")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prefill", type=int, default=4096)
    parser.add_argument("--decode", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", help="also write the records as JSON here")
    parser.add_argument("--dry-run", action="store_true", help="CPU, toy sizes, one repeat: checks the script")
    args = parser.parse_args(argv)
    names = args.models.split(",")
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"--models: unknown {', '.join(unknown)}; available: {', '.join(MODELS)}")
    if args.dry_run:
        from ccq_eval.ops.cpu_forms import install_cpu_backend

        install_cpu_backend()
        device, dtype, shapes = "cpu", torch.float32, TOY
        args.batch, args.prefill, args.decode, args.repeats = 2, 64, 4, 1
    else:
        if not torch.cuda.is_available():
            parser.error("no CUDA device; run on a GPU, or pass --dry-run to check the script on CPU")
        device, dtype, shapes = "cuda", torch.bfloat16, SHAPES
        print(f"# {torch.cuda.get_device_name()} torch {torch.__version__}", flush=True)
    records = []
    for name in names:
        model = build(name, shapes, device, dtype)
        params = sum(p.numel() for p in model.parameters())
        results = measure(model, args.batch, args.prefill, args.decode, device, args.repeats,
                          shapes[MODELS[name][1]]["vocab_size"])
        for phase, (seconds, tokens) in results.items():
            record = {"model": name, "phase": phase, "batch": args.batch, "tokens": tokens, "median_s": seconds,
                      "tokens_per_s": tokens / seconds, "parameters": params, "dry_run": args.dry_run}
            records.append(record)
            print(f"RESULT model={name} phase={phase} batch={args.batch} tokens={tokens} median_s={seconds:.6f} "
                  f"tokens_per_s={tokens / seconds:.1f}", flush=True)
        del model
        if device == "cuda":
            torch.cuda.empty_cache()
    by = {(r["model"], r["phase"]): r for r in records}
    for name in names:
        backbone = name.removeprefix("ccq_")
        for phase in ("prefill", "decode"):
            if name != backbone and (backbone, phase) in by:
                ratio = by[(name, phase)]["tokens_per_s"] / by[(backbone, phase)]["tokens_per_s"]
                print(f"RATIO model={name} backbone={backbone} phase={phase} throughput_ratio={ratio:.3f}")
    if args.out:
        Path(args.out).write_text(json.dumps(records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
