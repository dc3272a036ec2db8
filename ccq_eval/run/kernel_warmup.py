"""fla compiles and autotunes its Triton kernels on a GPU the first time a process meets a family, dtype, shape and
kernel variant: minutes in which a run's first unit shows no progress. A run on CUDA does that once, before its first
unit: each of its suites' drivers calls the model as its units will (Driver.exercise: the engine's prefill and cached
steps, lm-eval's scoring forward, perplexity chunks that continue a cache), at the longest length those suites use
and the run's batch size. It says so before it starts, and after in one line with how long it took and what it added
to Triton's on-disk cache; `ccq-eval warmup` does it ahead of time (a job array's first job, a shared cache folder).
No unit's time, and no timed figure, includes it."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Compilation:
    seconds: float
    new_cache_files: int  # files Triton wrote into its cache: 0 means every kernel was compiled before
    length: int
    batch: int
    cache_dir: str
    calls: str = "generation"  # what the model was called with (Driver.model_calls)

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


def compile_kernels(model, length: int, batch: int, exercise=None, calls: str = "generation") -> Compilation:
    """``exercise(model, length, batch)`` (default: the generation engine's calls) timed, and the files it added to
    Triton's cache counted."""
    from ccq_eval.generation.exercise import prefill_and_decode
    from ccq_eval.machine import triton_cache_dir

    folder = triton_cache_dir()
    before, start = cache_files(folder), time.perf_counter()
    (exercise or prefill_and_decode)(model, length, batch)
    _synchronize(model)
    return Compilation(time.perf_counter() - start, cache_files(folder) - before, length, batch, folder, calls)


def _synchronize(model) -> None:
    import torch

    device = next(model.parameters()).device
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _what(gpu: str, family: str, dtype: str, length: int, batch: int, calls: str) -> str:
    return f"fla's kernels for {gpu}, {family}, {dtype}, {calls} at {length} tokens x {batch}"


def announce(gpu: str, family: str, dtype: str, length: int, batch: int, cache_dir: str,
             calls: str = "generation") -> str:
    """The line said before: the first use of a family, dtype and shape compiles for minutes, which would otherwise
    look like a hang."""
    return (f"warming up {_what(gpu, family, dtype, length, batch, calls)} (the first use on a machine compiles "
            f"them, minutes; cached in {cache_dir})")


def describe(compilation: Compilation, gpu: str, family: str, dtype: str) -> str:
    """The line said after: what compiled, how long it took and where it went, or that it was compiled before."""
    what = _what(gpu, family, dtype, compilation.length, compilation.batch, compilation.calls)
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


def compile_and_say(model, provenance: dict, length: int, batch: int, out=print, exercise=None,
                    calls: str = "generation") -> Compilation:
    """The kernels compiled by ``exercise`` at ``length`` x ``batch``, with a line before (the wait may be minutes)
    and one after."""
    from ccq_eval.machine import triton_cache_dir

    names = _names(provenance)
    out(announce(*names, length, batch, triton_cache_dir(), calls))
    compilation = compile_kernels(model, length, batch, exercise, calls)
    out(describe(compilation, *names))
    return compilation


def call_key(driver) -> tuple:
    """Drivers with the same key call the model the same way: one warm-up serves them all."""
    return type(driver).exercise, driver.model_calls


def warm_up(evaluand, drivers: list[tuple[object, int]], batch: int, out=print) -> list[Compilation]:
    """Before a run's first unit: each distinct way its suites' ``drivers`` call the model (Driver.exercise), at the
    longest length given with a driver that calls it so, saying so through ``out``; nothing where nothing compiles
    (the CPU backend, transformers' own models)."""
    if not compiles_fla_kernels(evaluand.provenance):
        return []
    longest: dict[object, tuple[object, int]] = {}
    for driver, length in drivers:
        key = call_key(driver)
        if key not in longest or length > longest[key][1]:
            longest[key] = (driver, length)
    speaks = evaluand.ranks.rank == 0  # one rank speaks for a data-parallel run
    return [compile_and_say(evaluand.model, evaluand.provenance, length, batch,
                            out=out if speaks else (lambda line: None), exercise=driver.exercise,
                            calls=driver.model_calls)
            for driver, length in longest.values()]
