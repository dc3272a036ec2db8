"""Mamba (fla's ``mamba``): its selective scan runs fla's own torch fallback on a CPU; CCQ does not apply."""

from __future__ import annotations

from ccq_eval.families.base import NO_LINEAR_READ, Family

FAMILY = Family(
    cache_layout="separate", cached_chunks=False,  # "cached decoding only supports a single new token per step"
    model_type="mamba", name="Mamba", cpu=True, no_ccq=f"Mamba's selective scan: {NO_LINEAR_READ}",
    gpu_note="mamba_ssm's kernels when installed, else fla's torch fallback", cpu_note="fla's torch fallback",
    summary=("fla's torch fallback", "mamba_ssm or fla's fallback"),
)
