"""Samba (fla's ``samba``): Mamba plus sliding-window attention (the transformer family's CPU attention); CCQ does
not apply."""

from __future__ import annotations

from ccq_eval.families.base import NO_LINEAR_READ, Family

FAMILY = Family(
    cache_layout="padded", cached_chunks=False,  # its Mamba layers, as Mamba
    model_type="samba", name="Samba", cpu=True,
    no_ccq=f"Samba is Mamba plus sliding-window attention: {NO_LINEAR_READ}", gpu_note="fla's kernels + flash-attn",
    summary=("torch backend", "fla's kernels, flash-attn"),
)
