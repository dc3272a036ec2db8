"""Transformer++ (fla's ``transformer``): softmax attention through flash-attn's entry points, on a CPU through
ops/transformer/cpu.py (torch's scaled_dot_product_attention); its cache is keys and values. CCQ does not apply."""

from __future__ import annotations

from ccq_eval.families.base import NO_LINEAR_READ, Family, Patch, attention_cache_bytes

OPS = "ccq_eval.ops.transformer.cpu"

FAMILY = Family(
    cache_layout="padded", cached_chunks=True,
    model_type="transformer", name="Transformer++", cpu=True, no_ccq=f"softmax attention: {NO_LINEAR_READ}",
    gpu_note="flash-attn", summary=("torch backend", "flash-attn"),
    patches=(Patch("fla.layers.attn", "flash_attn_func", f"{OPS}:flash_attn_func"),
             Patch("fla.layers.attn", "flash_attn_varlen_func", f"{OPS}:flash_attn_varlen_func", may_be_absent=True)),
    cache_bytes=attention_cache_bytes,
)
