"""Mamba2 (fla's ``mamba2``): its selective scan and convolution run fla's own torch fallback on a CPU, its gated
group RMSNorm ops/mamba2/cpu.py; CCQ does not apply."""

from __future__ import annotations

from ccq_eval.families.base import NO_LINEAR_READ, Family, Patch

FAMILY = Family(
    cache_layout="separate", cached_chunks=False,  # as Mamba
    model_type="mamba2", name="Mamba2", cpu=True, no_ccq=f"Mamba2's selective scan: {NO_LINEAR_READ}",
    gpu_note="mamba_ssm's kernels when installed, else fla's torch fallback",
    cpu_note="fla's torch fallback; its gated norm from the backend",
    summary=("fla's torch fallback", "mamba_ssm or fla's fallback"),
    patches=(Patch("fla.modules.norm.layernorm_gated", "rmsnorm_fn", "ccq_eval.ops.mamba2.cpu:rmsnorm_fn"),),
)
