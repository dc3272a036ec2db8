"""The cost ledger of whole models, in the terms the GPU check prints: a 1.3B GLA and Gated DeltaNet, each beside its
CCQ version, priced kernel by kernel (benchmarks/ccq_profile.py's ledger: an H200's rates, GEMMs at GEMM_BANDWIDTH of
copy bandwidth, every kernel at least LAUNCH_FLOOR).

- prefill: the engine's packed prefill of ``--batch`` prompts of ``--length`` tokens (embedding, every block: the
  token mixer, its norms and MLP, the final norm, the lm_head at each prompt's last token, the first pick), run
  eagerly: its time is the GPU's priced time or the host's launches at 5 us each, whichever is longer;
- decoding: one step of the engine's fixed slots at ``--decode-batch`` rows (the same parts at one token a row, the
  states written in place, the pick on the device), replayed as a CUDA graph: each kernel at least 2 us.

A whole model is priced from two short ones built from its config: with one block and with two, the difference is
one block, so the model is ``one + (layers - 1) x (two - one)``. Matmuls are priced from their shapes and not
computed (ccq_profile.OpLedger.skip_matmuls), so a 1.3B model's prefill prices in seconds on a CPU. Every figure is
labelled per-layer or whole-model, and time ratio (CCQ's time over its backbone's) or rate ratio (CCQ's tokens/s over
its backbone's: what gpu_check.py prints as prefill_ratio and decode_ratio). Estimates, not measurements.

    python benchmarks/model_ledger.py [--batch 8] [--length 4096] [--decode-batch 64] [--family gla,gated_deltanet]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from pathlib import Path
from unittest import mock

import torch

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from ccq_profile import H200, LAUNCH_FLOOR, OpLedger, engine_kernels, fla_functions_scoped, gpu_forms  # noqa: E402
from gpu_throughput import SHAPES, TOY  # noqa: E402 - the 1.3B shapes, one table for every script

FIELDS = ("ops", "flops", "bytes", "h200", "h200_graph")


def build(model_type: str, shape: dict, layers: int, dtype: torch.dtype):
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models.registration import register_ccq_models

    register_ccq_models()
    config = AutoConfig.for_model(model_type, **{**shape, "num_hidden_layers": layers}, fuse_cross_entropy=False)
    torch.manual_seed(0)
    return AutoModelForCausalLM.from_config(config, dtype=dtype).eval()


@contextlib.contextmanager
def ledgered(book: OpLedger, family: str, ccq_step: str = "fused", ccq_read: str = "fused"):
    """The model as a GPU runs it, every op in ``book``: fla's functions as one kernel each, the engine's kernels,
    the own kernels trusted unchecked (their first-use check is not part of a step)."""
    from ccq_eval.ops import trust

    book.skip_matmuls = True
    with trust.forced("own"), torch.no_grad(), gpu_forms("ieee"), engine_kernels(book, family, ccq_step, ccq_read), \
            fla_functions_scoped(book), book:
        yield


def totals(book: OpLedger) -> dict:
    return {field: sum(row[field] for row in book.rows.values()) for field in FIELDS}


def prefill_book(model, family: str, batch: int, length: int, ccq_read: str = "fused") -> dict:
    """The engine's packed prefill and its first pick; CCQ's read ``ccq_read``: "fused" (one pass) or "composed"
    (as before it, torch ops over chunk slots)."""
    from ccq_eval.generation.layouts import layout_for

    layout, book = layout_for(model), OpLedger()
    prompts = [tuple((t * 7 + row) % 200 + 1 for t in range(length)) for row in range(batch)]
    with ledgered(book, family, ccq_read=ccq_read):
        _, logits = layout.prefill(prompts)
        logits.argmax(-1)
    return totals(book)


def step_book(model, family: str, rows: int, ccq_step: str = "fused") -> tuple[dict, int]:
    """One fixed-slot step at ``rows`` rows, pick included; and the bytes it cannot avoid (every weight, and every
    state read and written once)."""
    from ccq_eval.generation.cache_rows import cache_leaves
    from ccq_eval.generation.layouts import layout_for
    from ccq_eval.generation import static_rows
    from ccq_eval.generation.static_rows import StaticRows

    with torch.no_grad():
        batch, _ = layout_for(model).prefill([tuple(range(1, 17))] * rows)
    slots = StaticRows(model, batch.cache, rows, rows, capture=False)
    book = OpLedger()
    # the in-place routes installed by the ledger (outside fla's scoped functions, so each step counts as the one
    # kernel it is on a GPU), not again by the slots' own step
    with ledgered(book, family, ccq_step), mock.patch.object(static_rows, "states_written_in_place",
                                                    lambda model: contextlib.nullcontext()):
        slots.step_and_pick()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    states = sum(t.numel() * t.element_size() for t in cache_leaves(slots.cache))
    return totals(book), weights + 2 * states


def whole(one: dict, two: dict, layers: int) -> tuple[dict, dict]:
    """(one block, the whole model of ``layers`` blocks) from the books of a one- and a two-block model."""
    block = {field: two[field] - one[field] for field in FIELDS}
    return block, {field: one[field] + (layers - 1) * block[field] for field in FIELDS}


def prefill_seconds(book: dict) -> float:
    """Eager: the GPU's priced time, unless the host's launches take longer."""
    return max(book["h200"], book["ops"] * LAUNCH_FLOOR["eager"])


def price_family(name: str, model_type: str, shape: dict, batch: int, length: int, rows: int,
                 dtype: torch.dtype) -> dict:
    """The figures of one model: per layer and whole model, prefill and decoding."""
    layers = shape["num_hidden_layers"]
    books, before = {}, {}
    for count in (1, 2):
        model = build(model_type, shape, count, dtype)
        step, floor = step_book(model, name, rows)
        books[count] = (prefill_book(model, name, batch, length), step, floor)
        if model_type.startswith("ccq_"):  # CCQ as it was: the gate and norms around Welford's kernel; the read
            before[count] = (step_book(model, name, rows, "separate")[0],  # composed of torch ops
                             prefill_book(model, name, batch, length, "composed"))
        del model
    block_prefill, model_prefill = whole(books[1][0], books[2][0], layers)
    block_step, model_step = whole(books[1][1], books[2][1], layers)
    floor_one, floor_two = books[1][2], books[2][2]
    floor = floor_one + (layers - 1) * (floor_two - floor_one)
    step_s = model_step["h200_graph"]
    prefill_s = prefill_seconds(model_prefill)
    earlier = {}
    if before:
        _, model_before = whole(before[1][0], before[2][0], layers)
        _, prefill_before = whole(before[1][1], before[2][1], layers)
        earlier = {"before_ms_per_step": 1e3 * model_before["h200_graph"], "before_step_launches": model_before["ops"],
                   "before_mbu": floor / H200["bytes"] / model_before["h200_graph"],
                   "before_prefill_ms": 1e3 * prefill_seconds(prefill_before),
                   "before_prefill_launches": prefill_before["ops"]}
    return {**earlier, "layer_prefill_ms": 1e3 * prefill_seconds(block_prefill), "layer_step_ms": 1e3 * block_step["h200_graph"],
            "prefill_ms": 1e3 * prefill_s, "prefill_tokens_per_s": batch * length / prefill_s,
            "prefill_launches": model_prefill["ops"], "host_bound": model_prefill["ops"] * LAUNCH_FLOOR["eager"]
            > model_prefill["h200"], "ms_per_step": 1e3 * step_s, "decode_tokens_per_s": rows / step_s,
            "step_launches": model_step["ops"], "mbu": floor / H200["bytes"] / step_s}


def report(family: str, batch: int, length: int, rows: int, dtype: torch.dtype, toy: bool = False) -> dict:
    shape = (TOY if toy else SHAPES)[family]
    figures = {name: price_family(family, name, shape, batch, length, rows, dtype)
               for name in (family, f"ccq_{family}")}
    base, ccq = figures[family], figures[f"ccq_{family}"]
    print(f"\n## {family} and ccq_{family}, {shape['num_hidden_layers']} layers, {dtype} (H200 estimates, not "
          f"measurements)")
    for name, f in figures.items():
        print(f"  {name:22s} per-layer: prefill {f['layer_prefill_ms']:.3f} ms, step {f['layer_step_ms']:.4f} ms | "
              f"whole-model: prefill {batch}x{length} {f['prefill_ms']:.2f} ms ({f['prefill_tokens_per_s']:.3g} "
              f"tokens/s, {f['prefill_launches']} launches{', host-bound' if f['host_bound'] else ''}), step at "
              f"{rows} rows {f['ms_per_step']:.3f} ms ({f['decode_tokens_per_s']:.3g} tokens/s, "
              f"{f['step_launches']} launches, MBU {f['mbu']:.2f})")
    if "before_ms_per_step" in ccq:
        print(f"  {'ccq_' + family:22s} step before (the gate and norms around Welford's kernel): "
              f"{ccq['before_ms_per_step']:.3f} ms, {ccq['before_step_launches']} launches, MBU "
              f"{ccq['before_mbu']:.2f}, decode rate ratio {base['ms_per_step'] / ccq['before_ms_per_step']:.2f}")
        print(f"  {'ccq_' + family:22s} prefill before (its read composed of torch ops): "
              f"{ccq['before_prefill_ms']:.2f} ms, {ccq['before_prefill_launches']} launches, prefill rate ratio "
              f"{base['prefill_ms'] / ccq['before_prefill_ms']:.2f}")
    ratios = {"layer_prefill_time_ratio": ccq["layer_prefill_ms"] / base["layer_prefill_ms"],
              "layer_step_time_ratio": ccq["layer_step_ms"] / base["layer_step_ms"],
              "prefill_rate_ratio": ccq["prefill_tokens_per_s"] / base["prefill_tokens_per_s"],
              "decode_rate_ratio": ccq["decode_tokens_per_s"] / base["decode_tokens_per_s"]}
    print(f"  CCQ / backbone: per-layer time ratio prefill {ratios['layer_prefill_time_ratio']:.2f}x, step "
          f"{ratios['layer_step_time_ratio']:.2f}x | whole-model rate ratio (gpu_check's prefill_ratio, decode_ratio) "
          f"prefill {ratios['prefill_rate_ratio']:.2f}, decode {ratios['decode_rate_ratio']:.2f}")
    return {**figures, "ratios": ratios}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--length", type=int, default=4096)
    parser.add_argument("--decode-batch", type=int, default=64)
    parser.add_argument("--family", default="gla,gated_deltanet")
    parser.add_argument("--dtype", default="bfloat16")
    parser.add_argument("--toy", action="store_true", help="the dry run's toy shapes (a check of the script)")
    args = parser.parse_args(argv)
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    for family in args.family.split(","):
        report(family, args.batch, args.length, args.decode_batch, getattr(torch, args.dtype), args.toy)
    return 0


if __name__ == "__main__":
    sys.exit(main())
