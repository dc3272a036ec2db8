"""S-NIAH's early stop (a row stops once every needle value is in its output) against decoding all 128
tokens, side by side on the same prompts, through lm-eval's generate_until and the real wrapper.

zoo:gla-tiny does not retrieve, so the answer a retrieving model would give is stood in for by what this model
writes: each prompt's "needle value" is the first --answer-chars characters of its own full decoding (a
RULER value is a 7-digit number, and a model that retrieves says it first). Reports decoding steps (tokens
generated over the rows) and wall time, medians over --repeats, and checks that the outputs score alike.

    python benchmarks/sniah_early_stop.py [--prompts 8] [--batch 4] [--answer-chars 8] [--repeats 3]
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
import warnings
from pathlib import Path

warnings.filterwarnings("ignore")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--answer-chars", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from lm_eval.api.instance import Instance

    from ccq_eval.lm.decoding import DecodingHooks
    from ccq_eval.lm.wrapper import CCQEvalLM
    from ccq_eval.models import load_model
    from ccq_eval.suites.sniah.scoring import all_values_found, ruler_string_match

    model, tokenizer, _ = load_model("zoo:gla-tiny", device="cpu")
    lm = CCQEvalLM(model, tokenizer, max_length=1024, batch_size=args.batch)
    prompts = [f"One of the special magic numbers for item {i} is: {1000003 * (i + 1) % 9999991}. " * 12
               + f"What is the special magic number for item {i}? The special magic number for item {i} is"
               for i in range(args.prompts)]
    gen = {"do_sample": False, "temperature": 0.0, "max_gen_toks": 128, "until": []}

    def run(predicates):
        with lm.decoding(DecodingHooks(stop_when=predicates)) as hooks:
            start = time.perf_counter()
            out = lm.generate_until([Instance("generate_until", {}, (p, dict(gen)), i) for i, p in enumerate(prompts)],
                                    disable_tqdm=True)
        return time.perf_counter() - start, hooks.decode_steps, out

    _, _, full = run({lm.prompt_key(p): (lambda text: False) for p in prompts})
    values = {lm.prompt_key(p): [text[: args.answer_chars]] for p, text in zip(prompts, full)}
    rules = {"128 tokens": {k: (lambda text: False) for k in values},
             "early stop": {k: functools.partial(all_values_found, values=v) for k, v in values.items()}}
    results = {name: [run(r) for _ in range(args.repeats)] for name, r in rules.items()}
    print(f"{args.prompts} prompts, batch {args.batch}, answer = first {args.answer_chars} characters; "
          f"medians of {args.repeats}")
    for name, runs in results.items():
        print(f"  {name:<11} {statistics.median(r[0] for r in runs):7.2f} s  {runs[0][1]:6d} decoding steps")
    old, new = (statistics.median(r[0] for r in results[n]) for n in rules)
    steps_old, steps_new = (results[n][0][1] for n in rules)
    same = all(ruler_string_match(a, values[lm.prompt_key(p)]) == ruler_string_match(b, values[lm.prompt_key(p)])
               for p, a, b in zip(prompts, results["128 tokens"][0][2], results["early stop"][0][2]))
    print(f"  ratio: steps {steps_old / steps_new:.1f}x, wall {old / new:.2f}x; same scores: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
