"""GLA (fla's ``gla``) and its trained CCQ version ``ccq_gla`` (models/ccq_models/gla.py); its read on a CPU is ops/gla/cpu.py."""

from __future__ import annotations

from ccq_eval.families.base import Family, Patch, ccq_bytes, heads_of, short_conv_bytes, state_bytes

OPS = "ccq_eval.ops.gla.cpu"


def cache_bytes(config: dict, length: int, dtype: str, ccq: bool) -> int | None:
    """The state H x d_k x d_v (d_k = hidden x expand_k / H, d_v = hidden x expand_v / H), the short convolutions'
    state, and CCQ's statistics; None for grouped heads (num_kv_heads), which this does not count."""
    heads = heads_of(config)
    if config.get("num_kv_heads") not in (None, heads):
        return None
    key_dim, value_dim = int(config["hidden_size"] * config["expand_k"]), int(config["hidden_size"] * config["expand_v"])
    d_k = key_dim // heads
    per_layer = heads * d_k * (value_dim // heads) * state_bytes(dtype)
    per_layer += short_conv_bytes(config, key_dim, value_dim, dtype) + (ccq_bytes(heads, d_k, dtype) if ccq else 0)
    return config["num_hidden_layers"] * per_layer


FAMILY = Family(
    cache_layout="packed", cached_chunks=True,
    model_type="gla", name="GLA", cpu=True, ccq="ccq_gla", ccq_name="CCQ-GLA", ccq_models="ccq_eval.models.ccq_models.gla",
    patches=(Patch("fla.layers.gla", "chunk_gla", f"{OPS}:chunk_gla"),
             Patch("fla.layers.gla", "fused_recurrent_gla", f"{OPS}:fused_recurrent_gla"),
             Patch("fla.layers.gla", "fused_chunk_gla", f"{OPS}:fused_chunk_gla")),
    in_place_steps=(Patch("fla.layers.gla", "fused_recurrent_gla",
                          "ccq_eval.ops.gla.fused_recurrent:fused_recurrent_gla_in_place"),),
    cache_bytes=cache_bytes,
)
