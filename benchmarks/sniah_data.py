"""Building S-NIAH-1 data: ccq-eval cold (generate + freeze), ccq-eval cached (read back and verify),
and lm-eval's niah_single_1 generator (which regenerates on every run), on the same tokenizer,
lengths and sample count, measured side by side in one process.

    python benchmarks/sniah_data.py [--lengths 1024,2048,4096,8192] [--samples 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def _timed(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lengths", default="1024,2048,4096,8192")
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    lengths = [int(x) for x in args.lengths.split(",")]
    os.environ["CCQ_EVAL_CACHE"] = tempfile.mkdtemp(prefix="ccq-bench-")

    import nltk

    from ccq_eval.suites.sniah import data as sniah
    from tests.helpers import byte_tokenizer

    tok = byte_tokenizer()
    start = time.perf_counter()
    nltk.download = lambda *a, **k: False  # lm-eval's module asks for punkt_tab at import; never go online
    from lm_eval.tasks.ruler import niah_utils, prepare_niah

    import_s = time.perf_counter() - start

    def ours_cold():
        for path in Path(os.environ["CCQ_EVAL_CACHE"]).rglob("*"):
            if path.is_file():
                path.unlink()
        for L in lengths:
            sniah.load_or_generate("sniah_1", tok, L, args.samples, 0, None)

    def ours_cached():
        for L in lengths:
            assert sniah.load_or_generate("sniah_1", tok, L, args.samples, 0, None)[2]

    def theirs():
        for L in lengths:
            prepare_niah.generate_samples(prepare_niah.get_haystack(type_haystack="repeat"), TOKENIZER=tok,
                                          max_seq_length=L, template=niah_utils.TEMPLATE, type_haystack="repeat",
                                          type_needle_k="words", type_needle_v="numbers", num_samples=args.samples)

    cold = _timed(ours_cold, args.repeats)
    cached = _timed(ours_cached, args.repeats)
    lm_eval_s = _timed(theirs, args.repeats)
    print(f"S-NIAH-1, byte-level tokenizer, lengths {lengths}, {args.samples} samples each, medians of {args.repeats}")
    print(f"{'ccq-eval cold (generate + freeze)':<40}{cold:>8.2f} s")
    print(f"{'ccq-eval cached (read + verify hash)':<40}{cached:>8.2f} s")
    print(f"{'lm-eval niah_single_1 (every run)':<40}{lm_eval_s:>8.2f} s   (+ {import_s:.1f} s module import)")
    print(f"ratios: lm-eval / ccq-eval cold = {lm_eval_s / cold:.2f}x, lm-eval / ccq-eval cached = {lm_eval_s / cached:.1f}x")


if __name__ == "__main__":
    main()
