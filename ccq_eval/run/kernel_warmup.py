"""fla compiles and autotunes its Triton kernels on a GPU the first time a process meets a family, dtype and shape:
minutes in which a run's first unit shows no progress. A run on CUDA does that once, before its first unit, at its
longest length and its batch size (a prefill and a few cached decoding steps), and says so in one line with how long
it took and what it added to Triton's on-disk cache; `ccq-eval warmup` does it ahead of time (a job array's first
job, a shared cache folder). No unit's time, and no timed figure, includes it."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass

DECODE_STEPS = 4  # the decoding kernels (fused recurrent, the short convolution's update) compile on the first step


@dataclass(frozen=True)
class Compilation:
    seconds: float
    new_cache_files: int  # files Triton wrote into its cache: 0 means every kernel was compiled before
    length: int
    batch: int
    cache_dir: str

    def record(self) -> dict:
        return asdict(self)


def compiles_fla_kernels(provenance: dict) -> bool:
    """A model on CUDA whose family fla defines (transformers' own models run native torch: nothing to compile)."""
    from ccq_eval.families import backbone

    config = provenance.get("config") if isinstance(provenance.get("config"), dict) else {}
    on_cuda = str(provenance.get("device", "")).startswith("cuda")
    return on_cuda and backbone(str(config.get("model_type", ""))).origin == "fla"


def cache_files(folder: str) -> int:
    return sum(len(files) for _, _, files in os.walk(folder)) if os.path.isdir(folder) else 0


def exercise(model, length: int, batch: int, steps: int = DECODE_STEPS) -> None:
    """A prefill of ``batch`` x ``length`` tokens and ``steps`` cached decoding steps, through the generation engine's
    own prefill and step (the efficiency suite's measurement): the kernels compiled are the ones the units call
    (a packed prefill is fla's variable-length kernels, compiled apart from the fixed-length ones)."""
    import torch

    from ccq_eval.suites.efficiency.measure import measure_once

    device = next(model.parameters()).device
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (batch, length), generator=torch.Generator().manual_seed(0)).to(device)
    measure_once(model, ids, steps)
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def compile_kernels(model, length: int, batch: int) -> Compilation:
    from ccq_eval.machine import triton_cache_dir

    folder = triton_cache_dir()
    before, start = cache_files(folder), time.perf_counter()
    exercise(model, length, batch)
    return Compilation(time.perf_counter() - start, cache_files(folder) - before, length, batch, folder)


def describe(compilation: Compilation, gpu: str, family: str, dtype: str) -> str:
    """The one line a run or `ccq-eval warmup` prints."""
    what = f"fla's kernels for {gpu}, {family}, {dtype} at {compilation.length} tokens x {compilation.batch}"
    if compilation.new_cache_files:
        return (f"compiled {what}: {compilation.seconds:.0f} s, {compilation.new_cache_files} new files in "
                f"{compilation.cache_dir} (later runs on this cache skip it)")
    return f"{what}: already compiled ({compilation.cache_dir}); warm-up {compilation.seconds:.1f} s"


def said(compilation: Compilation, provenance: dict) -> str:
    """The line for a model with this provenance (its device, family and dtype)."""
    from ccq_eval.families import family_name
    from ccq_eval.machine import device_record

    gpu = device_record(provenance["device"]).get("name", provenance["device"])
    return describe(compilation, gpu, family_name(provenance["config"]), provenance["dtype"])


def warm_up(evaluand, length: int, batch: int, out=print) -> Compilation | None:
    """Compiles what a run on ``evaluand`` needs before its first unit, saying so through ``out``; None where nothing
    compiles (the CPU backend, transformers' own models)."""
    if not compiles_fla_kernels(evaluand.provenance):
        return None
    compilation = compile_kernels(evaluand.lm.model, length, batch)
    if evaluand.lm.rank == 0:
        out(said(compilation, evaluand.provenance))
    return compilation
