"""How many torch threads a CPU run should use: 1 against 2 on this machine, idle and with one other busy process,
for a zoo model and a 1.3B-shaped GLA stack (two layers of hidden 2048, random weights): prefill and decoding
time through the efficiency suite's own measurement (``measure_once``), medians of the repeats.

    python benchmarks/threads.py [--repeats 5] [--prefill 1024] [--decode 32]

Prints one line per case and, per model and load, the ratio of 2-thread to 1-thread time (below 1: two
threads are faster).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import warnings

import torch

warnings.filterwarnings("ignore")


def zoo_model():
    from ccq_eval.models.loading import load_model

    return load_model("zoo:gla-tiny", device="cpu").model


def gla_13b_shaped():
    from fla.models import GLAConfig, GLAForCausalLM

    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    torch.manual_seed(0)
    config = GLAConfig(hidden_size=2048, num_hidden_layers=2, num_heads=4, vocab_size=32000)
    return GLAForCausalLM(config).eval()


def busy_process() -> subprocess.Popen:
    """Another job on one core: a pure-Python loop, as a second run or a build would be."""
    return subprocess.Popen([sys.executable, "-c", "while True: pass"])


def timings(model, threads: int, prefill: int, decode: int, repeats: int) -> tuple[float, float]:
    from ccq_eval.suites.efficiency.measure import measure_once

    torch.set_num_threads(threads)
    ids = torch.randint(0, model.config.vocab_size, (1, prefill), generator=torch.Generator().manual_seed(0))
    measure_once(model, ids, decode)  # warm-up
    runs = [measure_once(model, ids, decode) for _ in range(repeats)]
    return statistics.median(r.prefill_s for r in runs), statistics.median(r.decode_s / decode for r in runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--prefill", type=int, default=1024)
    parser.add_argument("--decode", type=int, default=32)
    args = parser.parse_args()
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads by default; medians of {args.repeats}")
    for name, build in (("zoo gla-tiny", zoo_model), ("1.3B-shaped GLA x2 layers", gla_13b_shaped)):
        model = build()
        for load in ("idle", "one busy process"):
            busy = busy_process() if load != "idle" else None
            try:
                result = {n: timings(model, n, args.prefill, args.decode, args.repeats) for n in (1, 2)}
            finally:
                if busy is not None:
                    busy.kill()
            for n, (prefill_s, step_s) in result.items():
                print(f"{name:<28}{load:<18}{n} thread{'s' if n > 1 else ' '}  prefill {args.prefill}: "
                      f"{prefill_s * 1e3:9.1f} ms   decode: {step_s * 1e3:8.2f} ms/token")
            print(f"{name:<28}{load:<18}2 / 1 threads: prefill {result[2][0] / result[1][0]:.2f}x, "
                  f"decode {result[2][1] / result[1][1]:.2f}x")


if __name__ == "__main__":
    main()
