"""S-NIAH's answer NLL two ways, side by side in one run on a shipped zoo model: scored from the prefill that starts
decoding (what the S-NIAH driver asks of the engine) against decoding without it plus lm-eval's loglikelihood (a
second forward over every prompt, the reference). The same prompts; medians of the wall times.

    python benchmarks/answer_nll.py [--model zoo:gla-tiny] [--length 2048] [--samples 25] [--repeats 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", default="zoo:gla-tiny")
    parser.add_argument("--length", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from lm_eval.api.instance import Instance

    from ccq_eval.generation.text import Ask, engine_request
    from ccq_eval.models import load_model
    from ccq_eval.run import checkpoint_evaluand

    model, tokenizer, provenance = load_model(args.model, device="cpu")
    evaluand = checkpoint_evaluand(model, tokenizer, provenance, max_length=args.length, batch_size=args.samples)
    lm = evaluand.lm
    filler = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again. "
    prompts = [(filler * (args.length // len(filler)))[: args.length - 300] + f" The special magic number for item {i}"
               f" is: {1000003 * (i + 1) % 9999991}. What is the special magic number for item {i}? The number is"
               for i in range(args.samples)]
    answers = [f" {1000003 * (i + 1) % 9999991}" for i in range(args.samples)]

    def fused():
        requests = [engine_request(Ask(i, p, 128, score=a), tokenizer, args.length)
                    for i, (p, a) in enumerate(zip(prompts, answers))]
        return [r.continuation_nll for r in evaluand.generate(requests)]

    def reference():
        evaluand.generate([engine_request(Ask(i, p, 128), tokenizer, args.length) for i, p in enumerate(prompts)])
        scored = lm.loglikelihood([Instance("loglikelihood", {}, (p, a), i)
                                   for i, (p, a) in enumerate(zip(prompts, answers))], disable_tqdm=True)
        return [-logprob / len(tokenizer(a, add_special_tokens=False)["input_ids"])
                for (logprob, _), a in zip(scored, answers)]

    fused()  # warm
    times, values = {"prefill": [], "reference": []}, {}
    for _ in range(args.repeats):
        for name, call in (("prefill", fused), ("reference", reference)):
            start = time.perf_counter()
            values[name] = call()
            times[name].append(time.perf_counter() - start)
    fast, slow = statistics.median(times["prefill"]), statistics.median(times["reference"])
    diff = max(abs(a - b) for a, b in zip(values["prefill"], values["reference"]))
    print(f"{args.model} S-NIAH-style {args.length} x {args.samples} prompts (medians of {args.repeats}): "
          f"prefill-scored {fast:.1f} s, decoding + loglikelihood {slow:.1f} s, ratio {slow / fast:.2f}x; "
          f"max |NLL difference| {diff:.1e}")


if __name__ == "__main__":
    main()
