"""The GPU check: ccq-eval validated on one GPU in one command, part by part (each meant to take under 8 minutes on a
cold H200, compilation included, which no GPU has timed yet; `--families` cuts a part smaller; `ccq-eval warmup`
first makes a second run faster).

    python benchmarks/gpu_check.py [--part kernels|throughput|sniah|all] [--out gpu_check.json]
    python benchmarks/gpu_check.py --dry-run        (every part on the CPU at toy sizes: checks the script)
    python benchmarks/gpu_check.py --part throughput --families gla,ccq-gla   (a cold part split over commands)

- kernels: fla's CUDA kernels against ccq-eval's CPU backend in float64, for every zoo family, in float32 and
  bfloat16: argmax agreement and the largest relative logit error of a prefill, and cached decoding against the full
  forward.
- throughput: the paper's five families at the 1.3B shape, built on the device: prefill and decode tokens/s at
  batch 1, 8 and 64, MFU (2 x parameters FLOPs a token) against a bf16 matmul and MBU (the weights, and the
  recurrent state read and written, per decoding step) against a device copy, both measured in the same run; CCQ's
  ratio to its backbone; compilation cold (the first call at a shape) and warm (the second).
- sniah: S-NIAH-1 at 4K through `ccq-eval run` on a 1.3B-shaped GLA with a 32K-vocabulary BPE tokenizer (trained
  here on the shipped essays, with its own BOS): seconds per sample (compilation apart) and the paper's S-NIAH
  projected from it; the paper's LongBench projected, at most, from the engine's prefill rate and step time on that
  checkpoint at batch 1 and 8; beside them lm-eval's own RULER niah_single_1 through `ccq-eval lm-eval` on the same
  checkpoint.

One line per figure, `RESULT part=<part> <key>=<value> ...`, and the same records as JSON (--out).
"""

from __future__ import annotations

import argparse
import importlib.resources
import json
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import torch

warnings.filterwarnings("ignore")
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_throughput import MODELS, SHAPES, TOY  # noqa: E402 - the 1.3B shapes, one table for both scripts

ZOO = ("gla-tiny", "ccq-gla-tiny", "gdn-tiny", "ccq-gdn-tiny", "transformer-tiny")
PAPER_FIVE = ("gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "transformer")
SNIAH_PAPER = {"samples": 500, "tasks": 3, "lengths": (1024, 2048, 4096, 8192)}  # the paper's S-NIAH protocol


def family_of(name: str) -> str:
    """--families' spelling of a model: a zoo model's name less "-tiny", with dashes ("ccq_gla" -> "ccq-gla")."""
    return name.removesuffix("-tiny").replace("_", "-")


@dataclass
class Check:
    device: str
    dry_run: bool
    records: list = field(default_factory=list)
    families: tuple = ()  # --families: only these (a zoo model's family is its name less "-tiny"); empty: all

    def chosen(self, names) -> list[str]:
        wanted = {family_of(name) for name in self.families}
        return [n for n in names if not wanted or family_of(n) in wanted]

    def result(self, part: str, **values) -> None:
        self.records.append({"part": part, **values})
        text = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in values.items())
        print(f"RESULT part={part} {text}", flush=True)

    def sync(self) -> None:
        if self.device == "cuda":
            torch.cuda.synchronize()


# --- kernels --------------------------------------------------------------------------------------------------

def _agreement(logits: torch.Tensor, reference: torch.Tensor) -> tuple[float, float]:
    """(argmax agreement, largest |difference| relative to the reference's largest |logit|)."""
    agree = (logits.argmax(-1) == reference.argmax(-1)).float().mean().item()
    return agree, ((logits.double() - reference).abs().max() / reference.abs().max()).item()


def _decoding_error(model, ids: torch.Tensor, steps: int) -> float:
    """Cached decoding of the last ``steps`` tokens against the full forward's logits there (relative)."""
    with torch.inference_mode():
        full = model(input_ids=ids).logits[:, -steps:].double()
        out = model(input_ids=ids[:, :-steps], use_cache=True)
        cache, stepped = out.past_key_values, []
        for t in range(ids.shape[1] - steps, ids.shape[1]):
            out = model(input_ids=ids[:, t : t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            stepped.append(out.logits[:, -1].double())
    return ((torch.stack(stepped, 1) - full).abs().max() / full.abs().max()).item()


def each_model(check: Check, part: str, names, measure) -> None:
    """``measure(name)`` for every model; one that cannot run here (flash-attn absent for Transformer++, memory) is a
    RESULT line of its own with the reason, and the part goes on."""
    for name in names:
        try:
            measure(name)
        except Exception as exc:  # noqa: BLE001 - a figure that failed is reported, not fatal to the check
            check.result(part, model=name, not_run=f"{type(exc).__name__}: {exc}"[:200])
        if check.device == "cuda":
            torch.cuda.empty_cache()


def part_kernels(check: Check) -> None:
    each_model(check, "kernels", check.chosen(ZOO), lambda name: _kernels_of(check, name))


def _kernels_of(check: Check, name: str) -> None:
    from ccq_eval.models import load_model

    length, steps = (128, 4) if check.dry_run else (1024, 16)
    reference_model, tokenizer, _ = load_model(f"zoo:{name}", device="cpu", dtype="float64")
    ids = torch.randint(0, len(tokenizer), (1, length), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        reference = reference_model(input_ids=ids).logits
    del reference_model
    for dtype in ("float32", "bfloat16"):
        model, _, _ = load_model(f"zoo:{name}", device=check.device, dtype=dtype)
        on_device = ids.to(check.device)
        with torch.inference_mode():
            logits = model(input_ids=on_device).logits.cpu()
        agree, error = _agreement(logits, reference)
        check.result("kernels", model=name, dtype=dtype, argmax_agreement=agree, max_rel_logit_error=error,
                     decode_vs_forward_rel_error=_decoding_error(model, on_device, steps))



# --- throughput -----------------------------------------------------------------------------------------------

def ceilings(check: Check) -> tuple[float, float]:
    """(bf16 matmul FLOP/s, device copy bytes/s), measured here: what MFU and MBU are fractions of."""
    n, size = (256, 1 << 22) if check.dry_run else (8192, 1 << 30)
    dtype = torch.float32 if check.dry_run else torch.bfloat16
    a = torch.randn(n, n, device=check.device, dtype=dtype)
    source = torch.empty(size, dtype=torch.uint8, device=check.device)
    target = torch.empty_like(source)

    def best(fn, repeats=5) -> float:
        fn()
        times = []
        for _ in range(repeats):
            check.sync()
            start = time.perf_counter()
            fn()
            check.sync()
            times.append(time.perf_counter() - start)
        return min(times)

    flops = 2 * n ** 3 / best(lambda: a @ a)
    bandwidth = 2 * size / best(lambda: target.copy_(source))  # read and write
    return flops, bandwidth


def build_on_device(name: str, check: Check):
    """The model initialised on the device itself (no CPU copy of 1.3B parameters first)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    from ccq_eval.models.registration import register_ccq_models

    register_ccq_models()
    model_type, shape = MODELS[name]
    shapes = TOY if check.dry_run else SHAPES
    config = AutoConfig.for_model(model_type, **shapes[shape], fuse_cross_entropy=False)
    dtype = torch.float32 if check.dry_run else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(check.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    return model.eval(), shapes[shape]["vocab_size"]


def _timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def _throughput_of(check: Check, name: str, flops: float, bandwidth: float, rates: dict) -> None:
    from ccq_eval.suites.efficiency.measure import measure_once

    batches, prefill, decode = ((1, 2), 64, 4) if check.dry_run else ((1, 8, 64), 4096, 64)
    model, vocab = build_on_device(name, check)
    parameters = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    ids = torch.randint(0, vocab, (1, prefill), device=check.device)
    cold, _ = _timed(lambda: measure_once(model, ids, decode))
    warm, _ = _timed(lambda: measure_once(model, ids, decode))
    check.result("throughput", model=name, compile_cold_s=cold, warm_s=warm, parameters=parameters)
    for batch in batches:
        ids = torch.randint(0, vocab, (batch, prefill), device=check.device)
        measure_once(model, ids, decode)  # this batch's shapes compiled outside the timed runs
        runs = [measure_once(model, ids, decode) for _ in range(1 if check.dry_run else 3)]
        prefill_s = statistics.median(r.prefill_s for r in runs)
        decode_s = statistics.median(r.decode_s for r in runs)
        prefill_rate, decode_rate = batch * prefill / prefill_s, batch * decode / decode_s
        step_bytes = weight_bytes + 2 * runs[-1].cache_bytes  # the weights, and the state read and written, a step
        rates[(name, batch)] = (prefill_rate, decode_rate)
        check.result("throughput", model=name, batch=batch, prefill_tokens_per_s=prefill_rate,
                     mfu=2 * parameters * prefill_rate / flops, decode_tokens_per_s=decode_rate,
                     ms_per_step=1000 * decode_s / decode, mbu=step_bytes * (decode / decode_s) / bandwidth)


def part_throughput(check: Check) -> None:
    flops, bandwidth = ceilings(check)
    check.result("throughput", ceiling="bf16 matmul", tflops=flops / 1e12)
    check.result("throughput", ceiling="device copy", tb_per_s=bandwidth / 1e12)
    rates: dict = {}
    each_model(check, "throughput", check.chosen(PAPER_FIVE),
               lambda name: _throughput_of(check, name, flops, bandwidth, rates))
    for (name, batch), (prefill_rate, decode_rate) in rates.items():
        backbone = name.removeprefix("ccq_")
        if name != backbone and (backbone, batch) in rates:
            base = rates[(backbone, batch)]
            check.result("throughput", model=name, backbone=backbone, batch=batch,
                         prefill_ratio=prefill_rate / base[0], decode_ratio=decode_rate / base[1])


# --- sniah ----------------------------------------------------------------------------------------------------

def bpe_tokenizer(folder: Path, vocab: int):
    """A byte-level BPE trained on the shipped essays, with its own BOS (as SentencePiece models have), saved."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab, special_tokens=["<s>", "</s>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tokenizer.train([str(importlib.resources.files("ccq_eval.data") / "text" / "essays.txt")], trainer)
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 0)])
    wrapped = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    wrapped.save_pretrained(folder)
    return wrapped


def checkpoint(check: Check, folder: Path) -> None:
    """A GLA of the 1.3B shape (toy: the dry run's), random weights, with the BPE tokenizer, as a checkpoint."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = bpe_tokenizer(folder, 512 if check.dry_run else 32000)
    shape = dict((TOY if check.dry_run else SHAPES)["gla"], vocab_size=max(len(tokenizer), 260))
    config = AutoConfig.for_model("gla", **shape, bos_token_id=0, eos_token_id=1, fuse_cross_entropy=False)
    dtype = torch.float32 if check.dry_run else torch.bfloat16
    with torch.device(check.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.save_pretrained(folder)
    del model


def _ccq_eval_sniah(check: Check, folder: Path, store: Path, length: int, samples: int) -> tuple[float, float, float]:
    """(wall seconds of `ccq-eval run`, seconds of its one unit, seconds its kernel warm-up took before the unit)."""
    from datetime import datetime

    from ccq_eval.cli import main
    from ccq_eval.store import Store

    argv = ["--model", str(folder), "--suite", "sniah", "--tasks", "1", "--lengths", str(length), "--samples",
            str(samples), "--store", str(store), "--device", check.device, "--batch-size", "auto"]
    wall, code = _timed(lambda: main(argv))
    if code != 0:
        raise RuntimeError(f"ccq-eval run exited {code}")
    results = Store(store, readonly=True)
    (unit,) = results.units(status="complete")
    seconds = (datetime.fromisoformat(unit.finished) - datetime.fromisoformat(unit.started)).total_seconds()
    warm_up = sum(c["seconds"] for c in results.runs()[0].versions.get("compilation", []))  # none on the CPU
    return wall, max(seconds, 1.0), warm_up  # the store keeps whole seconds


def _lm_eval_ruler(check: Check, folder: Path, length: int, samples: int) -> float:
    """Wall seconds of lm-eval's own RULER niah_single_1 through `ccq-eval lm-eval`, nothing cut (max_length set)."""
    from ccq_eval.cli import main

    argv = ["lm-eval", "--model", "hf-no-truncation", "--model_args",
            f"pretrained={folder},max_length={length + 128},dtype={'float32' if check.dry_run else 'bfloat16'}",
            "--tasks", "niah_single_1", "--metadata", json.dumps({"max_seq_lengths": [length]}), "--limit",
            str(samples), "--batch_size", "auto", "--device", check.device]
    wall, code = _timed(lambda: main(argv))
    if code != 0:
        raise RuntimeError(f"ccq-eval lm-eval exited {code}")
    return wall


def _longbench_projection(check: Check, folder: Path, length: int) -> None:
    """The paper's LongBench (14 English tasks, every released sample) at most: each prompt at the suite's 16K budget
    and each generation at its task's full budget, at the prefill rate and decoding step time the engine measures on
    this checkpoint (``length``-token prompts; a linear-attention prefill costs the same per token at any length)."""
    from ccq_eval.models import load_model
    from ccq_eval.suites.efficiency.measure import measure_once
    from ccq_eval.suites.longbench import SUITE
    from ccq_eval.suites.longbench.tasks import RELEASED_SAMPLES, TASKS

    model, tokenizer, _ = load_model(str(folder), device=check.device,
                                     dtype="float32" if check.dry_run else "bfloat16")
    budget, steps = SUITE.default_lengths[0], 4 if check.dry_run else 32
    for batch in (1, 8):
        ids = torch.randint(0, len(tokenizer), (batch, length), device=check.device)
        measure_once(model, ids, steps)  # this batch's shapes compiled outside the timed run
        run = measure_once(model, ids, steps)
        per_token, per_step = run.prefill_s / (batch * length), run.decode_s / steps
        seconds = sum(samples * ((budget - TASKS[key].max_gen) * per_token + TASKS[key].max_gen * per_step / batch)
                      for key, samples in RELEASED_SAMPLES.items())
        check.result("sniah", projection="paper LongBench, at most (every prompt at 16K, every budget generated)",
                     batch=batch, prefill_tokens_per_s=1 / per_token, ms_per_step=1000 * per_step,
                     samples=sum(RELEASED_SAMPLES.values()), projected_min=seconds / 60)
    del model


def part_sniah(check: Check) -> None:
    length, samples = (1024, 2) if check.dry_run else (4096, 32)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        folder, store = Path(tmp) / "gla-bpe", Path(tmp) / "ccq.db"
        checkpoint(check, folder)
        wall, unit_s, warm_up_s = _ccq_eval_sniah(check, folder, store, length, samples)
        per_sample = unit_s / samples
        paper = sum(SNIAH_PAPER["samples"] * SNIAH_PAPER["tasks"] * per_sample * L / length
                    for L in SNIAH_PAPER["lengths"])  # prefill-bound: time grows with the length
        check.result("sniah", suite="ccq-eval S-NIAH-1", length=length, samples=samples, wall_s=wall,
                     warm_up_s=warm_up_s, unit_s=unit_s, s_per_sample=per_sample,
                     paper_sniah_projected_min=paper / 60)
        _longbench_projection(check, folder, length)
        try:
            ruler = _lm_eval_ruler(check, folder, length, samples)
            check.result("sniah", suite="lm-eval RULER niah_single_1", length=length, samples=samples, wall_s=ruler,
                         wall_ratio_to_ccq_eval=ruler / wall)
        except Exception as exc:  # noqa: BLE001 - the comparison is a figure of its own; the part goes on
            check.result("sniah", suite="lm-eval RULER niah_single_1", not_run=f"{type(exc).__name__}: {exc}"[:200])


PARTS = {"kernels": part_kernels, "throughput": part_throughput, "sniah": part_sniah}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="all", choices=(*PARTS, "all"))
    parser.add_argument("--out", help="also write the records as JSON here")
    parser.add_argument("--dry-run", action="store_true", help="every part on the CPU at toy sizes")
    parser.add_argument("--families", default="",
                        help="kernels and throughput for these only, comma-separated (gla, ccq-gla, gdn, ccq-gdn, "
                             "transformer for the zoo; gla, ccq-gla, gated-deltanet, ccq-gated-deltanet, transformer "
                             "at 1.3B): a cold part split over several commands")
    args = parser.parse_args(argv)
    families = tuple(name for name in args.families.split(",") if name)
    known = {family_of(n) for n in (*ZOO, *PAPER_FIVE)}
    if unknown := sorted({family_of(n) for n in families} - known):
        parser.error(f"--families {','.join(unknown)}: not one of {', '.join(sorted(known))}")
    if args.dry_run:
        from ccq_eval.models.cpu_backend import install_cpu_backend

        install_cpu_backend()
        check = Check("cpu", True, families=families)
    elif not torch.cuda.is_available():
        parser.error("no CUDA device; run on a GPU, or pass --dry-run to check the script on the CPU")
    else:
        check = Check("cuda", False, families=families)
        import triton

        from ccq_eval.machine import kernel_caches

        caches = ", ".join(f"{k} {v}" for k, v in kernel_caches().items() if v)  # a warm cache makes every part faster
        print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}; {caches}",
              flush=True)
    for name in PARTS if args.part == "all" else (args.part,):
        seconds, _ = _timed(lambda: PARTS[name](check))
        check.result(name, part_seconds=seconds)
        if args.out:  # written after every part: a part cut short by a time limit keeps the ones before it
            Path(args.out).write_text(json.dumps(check.records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
