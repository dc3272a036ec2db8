"""fla's tuned kernel configs, written where fla 0.6 reads them back: one ``<kernel>.json`` per kernel in a folder,
in the format of ``fla/ops/utils/cache.py`` (``autotune_entries`` keyed by fla's own hash of Triton's tuning key).

Most of the chunked kernels GLA and Gated DeltaNet run are declared with fla's ``fla_cache_autotune``: a process
started with ``FLA_CONFIG_DIR=<folder>`` and ``FLA_CACHE_MODE=fuzzy`` (or ``strict``) takes each kernel's config
from the folder instead of compiling and timing every candidate, so only the chosen config compiles. The folder is
small and holds no binaries: a job array on any node with the same GPU model can share it, where Triton's own
cache (compiled kernels) is per machine unless it sits on shared storage. `ccq-eval warmup --fla-configs` writes it
from what the warm-up tuned.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def tuned_autotuners() -> list:
    """Every fla kernel declared with fla's autotuner that has tuned at least one shape in this process."""
    from fla.ops.utils.cache import CachedAutotuner

    found, seen = [], set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("fla.") or module is None:
            continue
        for value in list(vars(module).values()):
            while value is not None and not isinstance(value, CachedAutotuner) and hasattr(value, "fn"):
                value = value.fn  # @triton.heuristics (or another wrapper) around the autotuner
            if isinstance(value, CachedAutotuner) and id(value) not in seen and value.cache:
                seen.add(id(value))
                found.append(value)
    return found


def config_record(config) -> dict:
    """A Triton config as fla's reader rebuilds it (``CachedAutotuner.maybe_load_cached_config``)."""
    return {"kwargs": dict(config.kwargs), "num_warps": config.num_warps, "num_stages": config.num_stages,
            "num_ctas": getattr(config, "num_ctas", 1), "maxnreg": getattr(config, "maxnreg", None),
            "ir_override": getattr(config, "ir_override", None)}


def entries_by_kernel(autotuners) -> dict[str, dict]:
    """{kernel name: {fla's key hash: {"autotune_key": [...], "config": {...}}}} over every tuned shape."""
    from fla.ops.utils.cache import AutotuneKey

    kernels: dict[str, dict] = {}
    for autotuner in autotuners:
        entries = kernels.setdefault(autotuner.kernel_name, {})
        for key, config in autotuner.cache.items():
            entries[AutotuneKey.key_hash(key)] = {"autotune_key": list(key), "config": config_record(config)}
    return kernels


def write_tuned_configs(folder: Path) -> tuple[int, int]:
    """This process's tuned configs into ``folder`` (merged with what a warm-up of another family, length or batch
    wrote there before; each file replaced whole). Returns (kernels, tuned shapes) written."""
    import triton

    from ccq_eval.data.cache import atomic_write

    folder.mkdir(parents=True, exist_ok=True)
    kernels = entries_by_kernel(tuned_autotuners())
    for kernel, entries in kernels.items():
        path = folder / f"{kernel}.json"
        known = _entries_in(path) if path.is_file() else {}
        record = {"kernel_name": kernel, "triton_version": triton.__version__,
                  "autotune_entries": {**known, **entries}}
        atomic_write(path, json.dumps(record, indent=1, sort_keys=True))
    return len(kernels), sum(len(entries) for entries in kernels.values())


def _entries_in(path: Path) -> dict:
    from ccq_eval.errors import BadInput

    try:
        entries = json.loads(path.read_text()).get("autotune_entries") or {}
    except (OSError, ValueError, AttributeError) as exc:
        raise BadInput(f"--fla-configs: {path} is not one of fla's config files ({exc}); pass another folder") from exc
    return entries
