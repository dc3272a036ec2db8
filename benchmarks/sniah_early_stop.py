"""S-NIAH's early stop (a row stops once every needle value is in its output) against decoding all 128
tokens, side by side on the same prompts, through the engine's generator (the driver's call).

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

    from ccq_eval.generation.text import Ask, completion_text, engine_request
    from ccq_eval.generation.generator import EngineGenerator
    from ccq_eval.models import load_model
    from ccq_eval.suites.sniah.scoring import all_values_found, ruler_string_match

    model, tokenizer, _ = load_model("zoo:gla-tiny", device="cpu")
    engine = EngineGenerator(model, tokenizer, args.batch)
    prompts = [f"One of the special magic numbers for item {i} is: {1000003 * (i + 1) % 9999991}. " * 12
               + f"What is the special magic number for item {i}? The special magic number for item {i} is"
               for i in range(args.prompts)]

    def run(predicates):
        requests = [engine_request(Ask(i, p, 128, stop_when=rule), tokenizer, 1024)
                    for i, (p, rule) in enumerate(zip(prompts, predicates))]
        start = time.perf_counter()
        results = engine.generate(requests)
        return (time.perf_counter() - start, sum(r.predicate_steps for r in results),
                [completion_text(tokenizer, r.tokens, ()) for r in results])

    never = [lambda text: False] * len(prompts)
    _, _, full = run(never)
    values = [[text.strip()[: args.answer_chars]] for text in full]  # RULER strips the output; values have no edge space
    rules = {"128 tokens": never, "early stop": [functools.partial(all_values_found, values=v) for v in values]}
    results = {name: [run(r) for _ in range(args.repeats)] for name, r in rules.items()}
    print(f"{args.prompts} prompts, batch {args.batch}, answer = first {args.answer_chars} characters; "
          f"medians of {args.repeats}")
    for name, runs in results.items():
        print(f"  {name:<11} {statistics.median(r[0] for r in runs):7.2f} s  {runs[0][1]:6d} decoding steps")
    old, new = (statistics.median(r[0] for r in results[n]) for n in rules)
    steps_old, steps_new = (results[n][0][1] for n in rules)
    same = all(ruler_string_match(a, v) == ruler_string_match(b, v)
               for v, a, b in zip(values, results["128 tokens"][0][2], results["early stop"][0][2]))
    print(f"  ratio: steps {steps_old / steps_new:.1f}x, wall {old / new:.2f}x; same scores: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
