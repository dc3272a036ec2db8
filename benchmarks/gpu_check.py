"""The GPU check: ccq-eval validated on one GPU in one command, figure by figure, within a time budget.

    python benchmarks/gpu_check.py --budget 550 --out gpu_check.json   (a 15-minute device window: what fits in 9)
    python benchmarks/gpu_check.py --out gpu_check.json                (every part, no limit)
    python benchmarks/gpu_check.py --part kernels --dtypes fp32,bf16   (one part; kernels in both dtypes)
    python benchmarks/gpu_check.py --part throughput --families gla,ccq-gla
    python benchmarks/gpu_check.py --dry-run                           (every part on the CPU at toy sizes)

- own_kernels (first): each of ccq-eval's own kernels (the GLA, Gated DeltaNet and DeltaNet in-place steps, CCQ's
  fused step and packed read on GLA's and GDN's heads) against its reference at the 1.3B heads, batch 64: the path the
  run's check chose, the largest relative difference, whether the state was written in place (none for the packed
  read, which writes new tensors), and each timed as CUDA graph replays against its reference (fla's function and the
  copy home; CCQ's torch forms) and a device copy of its state.
- kernels: fla's CUDA kernels against ccq-eval's CPU backend in float64, for every zoo family, in bfloat16 (what a
  user runs; `--dtypes fp32,bf16` adds float32): argmax agreement and the largest relative logit error of a prefill,
  and cached decoding against the full forward.
- throughput: the paper's five families at the 1.3B shape, built on the device: prefill and decode tokens/s at
  batch 1, 8 and 64, MFU (2 x parameters FLOPs a token) against a bf16 matmul and MBU (the weights, and the
  recurrent state read and written, per decoding step) against a device copy, both measured in the same run; CCQ's
  ratio to its backbone; the first call at a shape (compilation) against the second; whether decoding ran as a CUDA
  graph (`graph=captured`) or eagerly (`graph=eager`, with the reason); for the families with an own step, one engine
  decoding in fixed slots (captured) against plain cached steps at batch 1, token for token.
- sniah: S-NIAH-1 at 4K through `ccq-eval run` (batch 8) on a 1.3B-shaped GLA whose embedding has the paper's 32,000
  rows, with a byte-level BPE trained here on the shipped essays (its own BOS; its real size, about 2,200 tokens,
  is on the line): milliseconds per sample (the kernel warm-up apart) and the paper's S-NIAH projected from it; the
  paper's LongBench projected, at most, from the engine's prefill rate and step time on that checkpoint at batch 1
  and 8; beside them lm-eval's own RULER niah_single_1 through `ccq-eval lm-eval` on the same checkpoint.

`--budget SECONDS` runs the figures in the order of what they give per minute (PLAN: each one's value and its cold
time on an H200, predicted from the compile times measured there) and skips, naming it, each one whose predicted
time no longer fits what is left. One line per figure, `RESULT part=<part> <key>=<value> ...`; the same records as
JSON (--out), rewritten after every figure, so a check stopped at a limit keeps what it measured. A figure whose
package is absent (lm-eval, datasets, nltk: a bare image) says `RESULT part=<part> not_run=<why>`, and the check goes
on. Every time is in
milliseconds. The run's Python warnings are counted, and the distinct ones printed once at the end.
"""

from __future__ import annotations

import argparse
import importlib.resources
import importlib.util
import json
import statistics
import sys
import tempfile
import time
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_throughput import MODELS, SHAPES, TOY  # noqa: E402 - the 1.3B shapes, one table for both scripts

ZOO = ("gla-tiny", "ccq-gla-tiny", "gdn-tiny", "ccq-gdn-tiny", "transformer-tiny")
PAPER_FIVE = ("gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "transformer")
SNIAH_PAPER = {"samples": 500, "tasks": 3, "lengths": (1024, 2048, 4096, 8192)}  # the paper's S-NIAH protocol
DTYPES = {"fp32": "float32", "bf16": "bfloat16"}


def family_of(name: str) -> str:
    """--families' spelling of a model: a zoo model's name less "-tiny", with dashes ("ccq_gla" -> "ccq-gla")."""
    return name.removesuffix("-tiny").replace("_", "-")


@dataclass(frozen=True)
class Figure:
    """One unit of the check: a part for one model (or the whole part), with what it gives and what it costs.

    cold_s: its predicted time on a cold H200, compilation included, from the compile times measured there for a
    first 1.3B call (GLA 79 s, Gated DeltaNet 155 s; CCQ adds its own read's kernels), plus building the model and
    the timed runs; dry_s: the same on this project's CPU at toy sizes. value: what the figure tells, in points: the
    CCQ/backbone ratio and the engine's S-NIAH are the check's reason to run, the other families' throughput next,
    the kernels' agreement (also checked by the interpreter tier on the CPU) last."""

    part: str
    model: str | None
    cold_s: float
    dry_s: float
    value: float
    needs: tuple[str, ...] = ()  # packages the figure imports beyond torch, transformers and fla

    @property
    def name(self) -> str:
        return self.part if self.model is None else f"{self.part}:{family_of(self.model)}"

    def per_minute(self) -> float:
        return self.value / (self.cold_s / 60)


PLAN = (
    # first: every number after it depends on the own kernels being right on this device (their Triton kernels and
    # fla's fused-recurrent references compile in seconds, CCQ's packed read in about 10 s a head shape on this
    # project's 2-core CPU, ptxas included; no model is built)
    Figure("own_kernels", None, 55, 20, 8),
    Figure("throughput", "gla", 150, 6, 6), Figure("throughput", "ccq_gla", 175, 6, 6),
    # GLA's kernels already compiled by the throughput figures where they ran; `ccq-eval run` loads lm-eval's classes
    Figure("sniah", None, 170, 60, 6, needs=("lm_eval",)),
    Figure("throughput", "gated_deltanet", 225, 6, 4), Figure("throughput", "ccq_gated_deltanet", 255, 6, 4),
    Figure("throughput", "transformer", 60, 6, 1),
    Figure("kernels", "transformer-tiny", 25, 5, 0.5), Figure("kernels", "gla-tiny", 90, 5, 2),
    Figure("kernels", "ccq-gla-tiny", 110, 5, 2), Figure("kernels", "gdn-tiny", 165, 5, 2),
    Figure("kernels", "ccq-gdn-tiny", 190, 5, 2),
)


def plan(parts, families=(), budget: float | None = None) -> list[Figure]:
    """The figures to run, in order: the parts' own order without a budget, else most value per minute first."""
    wanted = {family_of(name) for name in families}
    figures = [f for part in parts for f in PLAN if f.part == part
               and (f.model is None or not wanted or family_of(f.model) in wanted)]
    return sorted(figures, key=lambda f: -f.per_minute()) if budget is not None else figures


def fits(figure: Figure, budget: float, dry_run: bool, kernel_dtypes: int = 1) -> bool:
    """Whether the figure, on its prediction, fits a budget this large (kernels: once per dtype)."""
    cost = figure.dry_s if dry_run else figure.cold_s
    return cost * (kernel_dtypes if figure.part == "kernels" else 1) <= budget


class WarningCount:
    """Every warning the check's code raises, counted by its first line, instead of printed where it happens."""

    def __init__(self):
        self.seen: Counter = Counter()

    def install(self) -> None:
        warnings.simplefilter("always")  # each occurrence counted, none swallowed
        warnings.showwarning = self.show

    def show(self, message, category, filename, lineno, file=None, line=None) -> None:
        first = (str(message).splitlines() or [""])[0][:300]
        self.seen[f"{category.__name__}: {first}"] += 1


def graph_of(outcome: str | None) -> dict:
    """A RESULT line's decoding fields: graph=captured, or graph=eager with eager_reason."""
    if outcome == "captured":
        return {"graph": "captured"}
    return {"graph": "eager", "eager_reason": (outcome or "eager: no decoding ran").removeprefix("eager: ")}


@dataclass
class Check:
    device: str
    dry_run: bool
    records: list = field(default_factory=list)
    families: tuple = ()  # --families: only these (a zoo model's family is its name less "-tiny"); empty: all
    out: Path | None = None
    dtypes: tuple = ("bfloat16",)
    rates: dict = field(default_factory=dict)  # (model, batch) -> (prefill, decode) tokens/s
    ceiling: tuple | None = None  # (bf16 matmul FLOP/s, device copy bytes/s), measured once

    def chosen(self, names) -> list[str]:
        wanted = {family_of(name) for name in self.families}
        return [n for n in names if not wanted or family_of(n) in wanted]

    def result(self, part: str, **values) -> None:
        """One figure: printed, and the JSON rewritten whole (a check stopped at a limit keeps every figure so far)."""
        self.records.append({"part": part, **values})
        if self.out is not None:  # before the line: a figure printed is a figure kept
            partial = self.out.with_name(self.out.name + ".part")
            partial.write_text(json.dumps(self.records, indent=1))
            partial.replace(self.out)
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


def measure(check: Check, part: str, name: str | None, fn) -> None:
    """``fn()`` for one model (or a whole part: ``name`` None); one that cannot run here (a package absent, flash-attn
    for Transformer++, memory) is a RESULT line of its own with the reason, and the check goes on."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - a figure that failed is reported, not fatal to the check
        check.result(part, **({} if name is None else {"model": name}), not_run=f"{type(exc).__name__}: {exc}"[:200])
    if check.device == "cuda":
        torch.cuda.empty_cache()


def kernels_of(check: Check, name: str) -> None:
    from ccq_eval.models import load_model

    length, steps = (128, 4) if check.dry_run else (1024, 16)
    reference_model, tokenizer, _ = load_model(f"zoo:{name}", device="cpu", dtype="float64")
    ids = torch.randint(0, len(tokenizer), (1, length), generator=torch.Generator().manual_seed(0))
    with torch.inference_mode():
        reference = reference_model(input_ids=ids).logits
    del reference_model
    for dtype in check.dtypes:
        model, _, _ = load_model(f"zoo:{name}", device=check.device, dtype=dtype)
        on_device = ids.to(check.device)
        with torch.inference_mode():
            logits = model(input_ids=on_device).logits.cpu()
        agree, error = _agreement(logits, reference)
        check.result("kernels", model=name, dtype=dtype, argmax_agreement=agree, max_rel_logit_error=error,
                     decode_vs_forward_rel_error=_decoding_error(model, on_device, steps))


# --- own kernels ----------------------------------------------------------------------------------------------

def _flat(outputs) -> list[torch.Tensor]:
    """A kernel's outputs as tensors, CCQ's statistics taken apart."""
    from ccq_eval.ops.ccq import CCQState

    found = []
    for x in outputs:
        found += [x.count, x.mean, x.cov] if isinstance(x, CCQState) else [x]
    return found


def _own_against_reference(call) -> tuple[float, bool | None]:
    """(the largest relative difference, whether the state was written where it lay) of the own kernel itself
    (--kernels own) against its reference, from the same state, at the call's whole batch."""
    from ccq_eval.ops import trust

    if call.state is None:  # new tensors only (CCQ's packed read): every output compared, nothing in place
        with torch.no_grad():
            expected = call.reference()
            with trust.forced("own"):
                got = call.own()
        return max(trust.relative_difference(o, e) for o, e in zip(_flat(got), _flat(expected), strict=True)), None
    before = call.state.clone()
    with torch.no_grad():
        expected = call.reference()
        expected_state = call.state.clone()
        call.state.copy_(before)
        with trust.forced("own"):
            got = call.own()
    # (outputs..., new state) or an output alone; CCQ's step returns (q', the k its read takes, its statistics)
    outputs, returned = (got[:-1], got[-1]) if isinstance(got, tuple) else ((got,), None)
    if returned is not None and not isinstance(returned, torch.Tensor):
        returned = returned.cov  # CCQ's step returns its statistics
    in_place = returned is None or returned.data_ptr() == call.state.data_ptr()
    expected_outputs = expected[:-1] if isinstance(expected, tuple) else (expected,)
    return max(*(trust.relative_difference(o, e) for o, e in zip(outputs, expected_outputs, strict=True)),
               trust.relative_difference(call.state, expected_state)), in_place


def own_kernels(check: Check) -> None:
    """Each own kernel at the 1.3B heads, batch 64: the run's check (a few rows, on first use), then the whole batch
    against its reference, in place or not, and its time against its reference and a copy of its state."""
    from ccq_eval.ops import checks, trust

    batch = 8 if check.dry_run else 64
    dtype = torch.float32 if check.dry_run else torch.bfloat16
    for call in checks.calls(batch, dtype, check.device):
        verdict = checks.check(call)
        difference, in_place = _own_against_reference(call)
        with trust.forced("own"):
            own_ms = checks.timed_ms(call.own, check.device)
        reference_ms = checks.timed_ms(call.reference, check.device)
        copy_ms = checks.copy_ms(call.state, check.device) if call.state is not None else None  # no state of its own
        check.result("own_kernels", kernel=call.kernel.split(",")[0].replace(" ", "_"), family=call.family, batch=batch,
                     dtype=str(dtype).removeprefix("torch."), heads="x".join(f"{k}{v}" for k, v in call.shape.items()),
                     path=verdict.path if verdict else "unchecked", max_rel_difference=difference, in_place=in_place,
                     tolerance=trust.TOLERANCE[dtype], own_ms=own_ms, reference_ms=reference_ms,
                     state_copy_ms=copy_ms, own_vs_copy_time_ratio=own_ms / copy_ms if copy_ms else None,
                     reference_vs_own_time_ratio=reference_ms / own_ms)


# --- throughput -----------------------------------------------------------------------------------------------

def ceilings(check: Check) -> tuple[float, float]:
    """(bf16 matmul FLOP/s, device copy bytes/s), measured here once (two RESULT lines): what MFU and MBU are
    fractions of."""
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

    if check.ceiling is None:
        flops = 2 * n ** 3 / best(lambda: a @ a)
        bandwidth = 2 * size / best(lambda: target.copy_(source))  # read and write
        check.ceiling = flops, bandwidth
        check.result("throughput", ceiling="bf16 matmul", tflops=flops / 1e12)
        check.result("throughput", ceiling="device copy", tb_per_s=bandwidth / 1e12)
    return check.ceiling


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


def throughput_of(check: Check, name: str) -> None:
    from ccq_eval.suites.efficiency.measure import measure_once

    flops, bandwidth = ceilings(check)
    batches, prefill, decode = ((1, 2), 64, 4) if check.dry_run else ((1, 8, 64), 4096, 64)
    model, vocab = build_on_device(name, check)
    parameters = sum(p.numel() for p in model.parameters())
    weight_bytes = sum(p.numel() * p.element_size() for p in model.parameters())
    ids = torch.randint(0, vocab, (1, prefill), device=check.device)
    cold, _ = _timed(lambda: measure_once(model, ids, decode))
    warm, _ = _timed(lambda: measure_once(model, ids, decode))
    check.result("throughput", model=name, compile_cold_ms=1000 * cold, warm_ms=1000 * warm, parameters=parameters)
    for batch in batches:
        ids = torch.randint(0, vocab, (batch, prefill), device=check.device)
        measure_once(model, ids, decode)  # this batch's shapes compiled outside the timed runs
        runs = [measure_once(model, ids, decode) for _ in range(1 if check.dry_run else 3)]
        prefill_s = statistics.median(r.prefill_s for r in runs)
        decode_s = statistics.median(r.decode_s for r in runs)
        prefill_rate, decode_rate = batch * prefill / prefill_s, batch * decode / decode_s
        step_bytes = weight_bytes + 2 * runs[-1].cache_bytes  # the weights, and the state read and written, a step
        check.rates[(name, batch)] = (prefill_rate, decode_rate)
        check.result("throughput", model=name, batch=batch, prefill_tokens_per_s=prefill_rate,
                     mfu=2 * parameters * prefill_rate / flops, decode_tokens_per_s=decode_rate,
                     ms_per_step=1000 * decode_s / decode, mbu=step_bytes * (decode / decode_s) / bandwidth,
                     **graph_of(runs[-1].graph))
    _ratios(check, name)
    if name in ENGINE_AGREEMENT:
        _engine_against_plain_steps(check, name, model, vocab)


ENGINE_AGREEMENT = ("gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet")  # the families with own steps


def _engine_against_plain_steps(check: Check, name: str, model, vocab: int) -> None:
    """One engine decoding in fixed slots (captured on CUDA, its own kernels as the run's check left them) against
    plain cached steps at batch 1 (fla's functions): how many requests give the same tokens."""
    from ccq_eval.generation.engine import generate
    from ccq_eval.generation.request import Request
    from ccq_eval.generation.step_graph import decoding_graphs

    g = torch.Generator().manual_seed(1)
    length, budget = (32, 4) if check.dry_run else (512, 32)
    asked = [Request(tuple(torch.randint(0, vocab, (length - length // 16 * i,), generator=g).tolist()),
                     max_new_tokens=budget)
             for i in range(8)]
    decoding_graphs(forget=True)
    fixed = generate(model, None, asked, batch_size=8, static=True)
    outcome = decoding_graphs(forget=True).get(type(model).__name__) or (
        "eager: not on CUDA" if check.device != "cuda" else None)
    plain = generate(model, None, asked, batch_size=1, static=False)
    same = sum(a.tokens == b.tokens for a, b in zip(fixed, plain))
    first = [next((t for t, (x, y) in enumerate(zip(a.tokens, b.tokens)) if x != y), None) for a, b in zip(fixed, plain)]
    check.result("throughput", model=name, engine="fixed slots vs plain cached steps", requests=len(asked),
                 tokens_each=budget, requests_equal=same, first_parting=min((t for t in first if t is not None),
                                                                            default="none"), **graph_of(outcome))


def _ratios(check: Check, name: str) -> None:
    """CCQ's rates over its backbone's, at each batch, once both are measured (in either order)."""
    ccq = name if name.startswith("ccq_") else f"ccq_{name}"
    backbone = ccq.removeprefix("ccq_")
    for (model, batch), (prefill_rate, decode_rate) in list(check.rates.items()):
        if model == ccq and (backbone, batch) in check.rates:
            base = check.rates[(backbone, batch)]
            check.result("throughput", model=ccq, backbone=backbone, batch=batch,
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


def checkpoint(check: Check, folder: Path) -> tuple[int, int]:
    """A GLA of the 1.3B shape (toy: the dry run's), random weights, with the BPE tokenizer, as a checkpoint: (the
    tokenizer's size, the embedding's rows). The essays give a BPE of about 2,200 tokens, whatever size is asked; the
    embedding keeps the paper's 32,000 rows, so the LM head costs what the paper's does (ids the tokenizer lacks
    decode to nothing)."""
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = bpe_tokenizer(folder, 512 if check.dry_run else 32000)
    rows = 2 * len(tokenizer) if check.dry_run else SHAPES["gla"]["vocab_size"]
    shape = dict((TOY if check.dry_run else SHAPES)["gla"], vocab_size=rows)
    config = AutoConfig.for_model("gla", **shape, bos_token_id=0, eos_token_id=1, fuse_cross_entropy=False)
    dtype = torch.float32 if check.dry_run else torch.bfloat16
    with torch.device(check.device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype)
    model.save_pretrained(folder)
    del model
    return len(tokenizer), rows


def _decoding(check: Check) -> dict:
    """How the engine's decoding ran since the last call (GLA's class), as RESULT fields."""
    from ccq_eval.generation.step_graph import decoding_graphs

    seen = decoding_graphs(forget=True)
    outcome = seen.get("GLAForCausalLM") or ("eager: not on CUDA" if check.device != "cuda" else None)
    return graph_of(outcome)


def _ccq_eval_sniah(check: Check, folder: Path, store: Path, length: int, samples: int) -> tuple[float, float, float]:
    """(wall seconds of `ccq-eval run`, seconds of its one unit, seconds its kernel warm-up took before the unit)."""
    from datetime import datetime

    from ccq_eval.cli import main
    from ccq_eval.store import Store

    argv = ["--model", str(folder), "--suite", "sniah", "--tasks", "1", "--lengths", str(length), "--samples",
            str(samples), "--store", str(store), "--device", check.device, "--batch-size", "8"]
    wall, code = _timed(lambda: main(argv))
    if code != 0:
        raise RuntimeError(f"ccq-eval run exited {code}")
    results = Store(store, readonly=True)
    (unit,) = results.reads.units(status="complete")
    seconds = (datetime.fromisoformat(unit.finished) - datetime.fromisoformat(unit.started)).total_seconds()
    warm_up = sum(c["seconds"] for c in results.reads.runs()[0].versions.get("compilation", []))  # none on the CPU
    return wall, max(seconds, 1e-3), warm_up  # the store keeps milliseconds


def _lm_eval_ruler(check: Check, folder: Path, length: int, samples: int) -> float:
    """Wall seconds of lm-eval's own RULER niah_single_1 through `ccq-eval lm-eval`, nothing cut (max_length set)."""
    from ccq_eval.cli import main

    argv = ["lm-eval", "--model", "hf-no-truncation", "--model_args",
            f"pretrained={folder},max_length={length + 128},dtype={'float32' if check.dry_run else 'bfloat16'}",
            "--tasks", "niah_single_1", "--metadata", json.dumps({"max_seq_lengths": [length]}), "--limit",
            str(samples), "--batch_size", "8", "--device", check.device]
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
                     samples=sum(RELEASED_SAMPLES.values()), projected_min=seconds / 60, **graph_of(run.graph))
    del model


def sniah(check: Check) -> None:
    length, samples = (1024, 2) if check.dry_run else (4096, 32)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as tmp:
        folder, store = Path(tmp) / "gla-bpe", Path(tmp) / "ccq.db"
        tokens, rows = checkpoint(check, folder)
        tokenizer = f"byte-level BPE of {tokens} tokens trained on the shipped essays, own BOS"
        _decoding(check)  # what ran before this part is not this part's
        wall, unit_s, warm_up_s = _ccq_eval_sniah(check, folder, store, length, samples)
        per_sample = unit_s / samples
        paper = sum(SNIAH_PAPER["samples"] * SNIAH_PAPER["tasks"] * per_sample * L / length
                    for L in SNIAH_PAPER["lengths"])  # prefill-bound: time grows with the length
        check.result("sniah", suite="ccq-eval S-NIAH-1", length=length, samples=samples, batch=8,
                     tokenizer=tokenizer.replace(" ", "_"), tokenizer_tokens=tokens, embedding_rows=rows,
                     wall_ms=1000 * wall, warm_up_ms=1000 * warm_up_s, unit_ms=1000 * unit_s,
                     ms_per_sample=1000 * per_sample, paper_sniah_projected_min=paper / 60, **_decoding(check))
        _longbench_projection(check, folder, length)
        try:
            ruler = _lm_eval_ruler(check, folder, length, samples)
            check.result("sniah", suite="lm-eval RULER niah_single_1", length=length, samples=samples, batch=8,
                         wall_ms=1000 * ruler, wall_ratio_to_ccq_eval=ruler / wall, **_decoding(check))
        except Exception as exc:  # noqa: BLE001 - the comparison is a figure of its own; the part goes on
            check.result("sniah", suite="lm-eval RULER niah_single_1", not_run=f"{type(exc).__name__}: {exc}"[:200])


def missing(packages: tuple[str, ...]) -> list[str]:
    """The packages that cannot be imported here."""
    absent = []
    for name in packages:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            absent.append(name)
    return absent


def run_figure(check: Check, figure: Figure) -> None:
    if absent := missing(figure.needs):
        check.result(figure.part, **({} if figure.model is None else {"model": figure.model}),
                     not_run=f"{', '.join(absent)} not importable here")
        return
    figures = {"kernels": kernels_of, "throughput": throughput_of}
    if figure.part in figures:
        measure(check, figure.part, figure.model, lambda: figures[figure.part](check, figure.model))
    else:
        measure(check, figure.part, None, lambda: PART_FIGURES[figure.part](check))


PARTS = ("own_kernels", "kernels", "throughput", "sniah")
PART_FIGURES = {"own_kernels": own_kernels, "sniah": sniah}  # the parts that are one figure each


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", default="all", choices=(*PARTS, "all"))
    parser.add_argument("--out", help="also write the records as JSON here (rewritten after every figure)")
    parser.add_argument("--dry-run", action="store_true", help="every part on the CPU at toy sizes")
    parser.add_argument("--budget", type=float, metavar="SECONDS",
                        help="run the figures that fit this many seconds, most value per minute first, and name the "
                             "ones skipped (550 for a 15-minute device window)")
    parser.add_argument("--dtypes", default="bf16", help="the kernels part's dtypes: bf16 (default), fp32, or fp32,bf16")
    parser.add_argument("--families", default="",
                        help="kernels and throughput for these only, comma-separated (gla, ccq-gla, gdn, ccq-gdn, "
                             "transformer for the zoo; gla, ccq-gla, gated-deltanet, ccq-gated-deltanet, transformer "
                             "at 1.3B): a cold part split over several commands")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    families = tuple(name for name in args.families.split(",") if name)
    known = {family_of(n) for n in (*ZOO, *PAPER_FIVE)}
    if unknown := sorted({family_of(n) for n in families} - known):
        parser.error(f"--families {','.join(unknown)}: not one of {', '.join(sorted(known))}")
    dtypes = tuple(name for name in args.dtypes.split(",") if name)
    if not dtypes or (unknown := sorted(set(dtypes) - set(DTYPES))):
        parser.error(f"--dtypes {args.dtypes!r}: give bf16, fp32 or fp32,bf16")
    if args.budget is not None and not args.budget > 0:
        parser.error(f"--budget {args.budget:g}: give the seconds the check may take, more than 0")
    counted = WarningCount()
    counted.install()
    if args.dry_run:
        from ccq_eval.ops.cpu_forms import install_cpu_backend

        install_cpu_backend()
        device = "cpu"
    elif not torch.cuda.is_available():
        parser.error("no CUDA device; run on a GPU, or pass --dry-run to check the script on the CPU")
    else:
        device = "cuda"
        import triton

        from ccq_eval.machine import kernel_caches

        caches = ", ".join(f"{k} {v}" for k, v in kernel_caches().items() if v)  # a warm cache makes every part faster
        print(f"# {torch.cuda.get_device_name()} torch {torch.__version__} triton {triton.__version__}; {caches}",
              flush=True)
    check = Check(device, args.dry_run, families=families, out=Path(args.out) if args.out else None,
                  dtypes=tuple(DTYPES[d] for d in dict.fromkeys(dtypes)))
    parts = PARTS if args.part == "all" else (args.part,)
    spent = {part: 0.0 for part in parts}
    for figure in plan(parts, families, args.budget):
        left = None if args.budget is None else args.budget - (time.perf_counter() - started)
        if left is not None and not fits(figure, left, args.dry_run, len(check.dtypes)):
            check.result("plan", skipped=figure.name, predicted_ms=1000 * (figure.dry_s if args.dry_run else
                                                                            figure.cold_s), left_ms=1000 * left)
            continue
        seconds, _ = _timed(lambda: run_figure(check, figure))
        spent[figure.part] += seconds
    for part, seconds in spent.items():
        check.result(part, part_ms=1000 * seconds)
    check.result("warnings", count=sum(counted.seen.values()), distinct=len(counted.seen))
    for text, count in counted.seen.most_common():
        print(f"# warning, {count} x: {text}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
