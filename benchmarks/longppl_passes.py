"""One pass per document (ccq-eval's longppl engine) against lm-eval's loglikelihood_rolling on the
same documents truncated to each length: the same quantity, evaluated once per length. Same model,
measured side by side in one run; then the one-pass engine's peak memory at 4K and at 20K, each in a
fresh subprocess (a process's peak RSS never goes down).

Targets (issue 4): >= 4x less wall time for a 9-length curve; peak memory at 20K <= 1.5x that at 4K
for recurrent models.

    python benchmarks/longppl_passes.py [--docs 2] [--family gla]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
warnings.filterwarnings("ignore")

LENGTHS = list(range(4096, 20480 + 1, 2048))  # the paper's 4K..20K curve: 9 lengths


def build(family: str):
    from ccq_eval.ops.cpu_forms import install_cpu_backend
    from tests.helpers import byte_tokenizer, tiny_model

    install_cpu_backend()
    torch.manual_seed(0)
    model = tiny_model(family, hidden_size=256, num_hidden_layers=4, num_heads=4)
    return model, byte_tokenizer()


def documents(tokenizer, count: int) -> list[list[int]]:
    import random

    rng = random.Random(0)
    words = "the of and to in is that it was for on are as with his they at be this from".split()
    docs = []
    for _ in range(count):
        text = " ".join(rng.choice(words) for _ in range(6000))
        docs.append([tokenizer.bos_token_id, *tokenizer(text, add_special_tokens=False)["input_ids"][: LENGTHS[-1]]])
    return docs


def one_pass(model, docs) -> tuple[dict, int]:
    from ccq_eval.suites.longppl.perplexity import prefix_nll_sums, sequence_nll

    sums = {L: 0.0 for L in LENGTHS}
    for ids in docs:
        for L, total in prefix_nll_sums(sequence_nll(model, ids, 2048), LENGTHS).items():
            sums[L] += total
    return sums, sum(len(ids) - 1 for ids in docs)


def per_length_rolling(model, tokenizer, docs) -> tuple[dict, int]:
    from lm_eval.api.instance import Instance

    from ccq_eval.run import checkpoint_evaluand

    lm = checkpoint_evaluand(model, tokenizer, {}, max_length=LENGTHS[-1], batch_size=1, tokenizer_path="").lm
    sums, tokens = {}, 0
    for L in LENGTHS:
        requests = [Instance("loglikelihood_rolling", doc={}, arguments=(tokenizer.decode(ids[1 : L + 1]),), idx=i)
                    for i, ids in enumerate(docs)]
        sums[L] = -sum(lm.loglikelihood_rolling(requests, disable_tqdm=True))
        tokens += L * len(docs)
    return sums, tokens


def child_memory(family: str, length: int) -> dict:
    from ccq_eval.suites.longppl.perplexity import sequence_nll

    model, tokenizer = build(family)
    ids = documents(tokenizer, 1)[0][: length + 1]
    before = _status("VmRSS")
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")  # reset the high-water mark
    sequence_nll(model, ids, 2048)
    return {"peak_bytes": _status("VmHWM") - before}


def _status(field: str) -> int:
    for line in open("/proc/self/status"):
        if line.startswith(field + ":"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(field)


def peak(family: str, length: int) -> int:
    out = subprocess.run([sys.executable, __file__, "--child", family, str(length)], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])["peak_bytes"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--family", default="gla")
    parser.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child_memory(args.child[0], int(args.child[1]))))
        return
    model, tokenizer = build(args.family)
    docs = documents(tokenizer, args.docs)
    with torch.no_grad():
        start = time.perf_counter()
        ours, our_tokens = one_pass(model, docs)
        ours_s = time.perf_counter() - start
        start = time.perf_counter()
        theirs, their_tokens = per_length_rolling(model, tokenizer, docs)
        theirs_s = time.perf_counter() - start
    worst = max(abs(ours[L] - theirs[L]) / theirs[L] for L in LENGTHS)
    print(f"{args.family} (hidden 256, 4 layers), byte tokenizer, {args.docs} documents, lengths 4K..20K (9), CPU")
    print(f"{'one pass at 20K':<34}{ours_s:>8.1f} s  {our_tokens:>8} tokens")
    print(f"{'lm-eval rolling, once per length':<34}{theirs_s:>8.1f} s  {their_tokens:>8} tokens")
    print(f"ratios: wall time {theirs_s / ours_s:.1f}x, tokens processed {their_tokens / our_tokens:.1f}x; "
          f"max relative NLL difference {worst:.1e}")
    m4, m20 = peak(args.family, 4096), peak(args.family, 20480)
    print(f"one-pass peak memory (fresh process each): 4K {m4 / 2**20:.1f} MB, 20K {m20 / 2**20:.1f} MB, "
          f"ratio {m20 / m4:.2f}x")


if __name__ == "__main__":
    main()
