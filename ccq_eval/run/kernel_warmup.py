"""fla compiles and autotunes its Triton kernels on a GPU the first time a process meets a family, dtype and shape:
minutes in which a run's first unit shows no progress. A run on CUDA does that once, before its first unit, at its
longest length and its batch size (a prefill and a few cached decoding steps), says so before it starts, and after in
one line with how long it took and what it added to Triton's on-disk cache; `ccq-eval warmup` does it ahead of time
(a job array's first job, a shared cache folder). No unit's time, and no timed figure, includes it."""

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


def _what(gpu: str, family: str, dtype: str, length: int, batch: int) -> str:
    return f"fla's kernels for {gpu}, {family}, {dtype} at {length} tokens x {batch}"


def announce(gpu: str, family: str, dtype: str, length: int, batch: int, cache_dir: str) -> str:
    """The line said before: the first use of a family, dtype and shape compiles for minutes, which would otherwise
    look like a hang."""
    return (f"warming up {_what(gpu, family, dtype, length, batch)} (the first use on a machine compiles them, "
            f"minutes; cached in {cache_dir})")


def describe(compilation: Compilation, gpu: str, family: str, dtype: str) -> str:
    """The line said after: what compiled, how long it took and where it went, or that it was compiled before."""
    what = _what(gpu, family, dtype, compilation.length, compilation.batch)
    if compilation.new_cache_files:
        return (f"compiled {what}: {compilation.seconds:.0f} s, {compilation.new_cache_files} new files in "
                f"{compilation.cache_dir} (later runs on this cache skip it)")
    return f"{what}: already compiled ({compilation.cache_dir}); warm-up {compilation.seconds:.1f} s"


def _names(provenance: dict) -> tuple[str, str, str]:
    """(GPU, family, dtype) of a model with this provenance."""
    from ccq_eval.families import family_name
    from ccq_eval.machine import device_record

    gpu = device_record(provenance["device"]).get("name", provenance["device"])
    return gpu, family_name(provenance["config"]), provenance["dtype"]


def compile_and_say(model, provenance: dict, length: int, batch: int, out=print) -> Compilation:
    """The kernels compiled at ``length`` x ``batch``, with a line before (the wait may be minutes) and one after."""
    from ccq_eval.machine import triton_cache_dir

    names = _names(provenance)
    out(announce(*names, length, batch, triton_cache_dir()))
    compilation = compile_kernels(model, length, batch)
    out(describe(compilation, *names))
    return compilation


def warm_up(evaluand, length: int, batch: int, out=print) -> Compilation | None:
    """Compiles what a run on ``evaluand`` needs before its first unit, saying so through ``out``; None where nothing
    compiles (the CPU backend, transformers' own models)."""
    if not compiles_fla_kernels(evaluand.provenance):
        return None
    speaks = evaluand.lm.rank == 0  # one rank speaks for a data-parallel run
    return compile_and_say(evaluand.lm.model, evaluand.provenance, length, batch,
                           out=out if speaks else (lambda line: None))
