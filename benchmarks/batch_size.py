"""Generation batch size on this machine: the same S-NIAH-style prompts through lm-eval's generate_until
and the real wrapper at several batch sizes, side by side (what `--batch-size auto` resolves to on CPU
rests on this; on a GPU it is the largest that fits, run/batching.py).

    python benchmarks/batch_size.py [--sizes 1,4,16] [--prompts 16] [--length 2048] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,4,16")
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--length", type=int, default=2048, help="prompt bytes (tokens, byte tokenizer)")
    parser.add_argument("--tokens", type=int, default=32, help="tokens generated per prompt")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--model", default="zoo:gla-tiny")
    args = parser.parse_args()

    from lm_eval.api.instance import Instance

    from ccq_eval.models import load_model
    from ccq_eval.run import checkpoint_evaluand

    model, tokenizer, provenance = load_model(args.model, device="cpu")
    essay = (Path(__file__).resolve().parent.parent / "ccq_eval" / "data" / "text").glob("*")
    text = "".join(p.read_text(errors="ignore") for p in sorted(essay) if p.is_file())
    prompts = [text[i * 97: i * 97 + args.length - 40 - i] + " The special magic number is" for i in range(args.prompts)]
    gen = {"do_sample": False, "temperature": 0.0, "max_gen_toks": args.tokens, "until": []}
    results, outputs = {}, {}
    for size in (int(s) for s in args.sizes.split(",")):
        lm = checkpoint_evaluand(model, tokenizer, provenance, max_length=args.length + args.tokens, batch_size=size).lm
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            outputs[size] = lm.generate_until([Instance("generate_until", {}, (p, dict(gen)), i)
                                               for i, p in enumerate(prompts)], disable_tqdm=True)
            times.append(time.perf_counter() - start)
        results[size] = statistics.median(times)
    base = results[min(results)]
    print(f"{args.model}: {args.prompts} prompts of ~{args.length} tokens, {args.tokens} generated; medians of {args.repeats}")
    for size, seconds in results.items():
        same = sum(a == b for a, b in zip(outputs[size], outputs[min(results)]))
        print(f"  batch {size:>3}: {seconds:7.2f} s  ({base / seconds:.2f}x batch {min(results)}); "
              f"{same}/{args.prompts} outputs equal batch {min(results)}'s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
