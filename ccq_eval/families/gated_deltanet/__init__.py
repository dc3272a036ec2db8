"""Gated DeltaNet (fla's ``gated_deltanet``, also with ``attn`` layers: the GDN hybrids) and its trained CCQ version
``ccq_gated_deltanet`` (models/ccq_models/gated_deltanet.py); its read on a CPU is ops/gated_deltanet/cpu.py."""

from __future__ import annotations

from ccq_eval.families.base import Family, Patch, ccq_bytes, heads_of, short_conv_bytes, state_bytes

OPS = "ccq_eval.ops.gated_deltanet.cpu"


def cache_bytes(config: dict, length: int, dtype: str, ccq: bool) -> int | None:
    """HV x d_k x d_v (d_k = head_dim, d_v = head_dim x expand_v), the short convolutions' state, CCQ's statistics."""
    heads = heads_of(config)
    v_heads = config.get("num_v_heads") or heads
    d_k = config["head_dim"]
    d_v = int(d_k * config["expand_v"])
    per_layer = v_heads * d_k * d_v * state_bytes(dtype) + short_conv_bytes(config, heads * d_k, v_heads * d_v, dtype)
    return config["num_hidden_layers"] * (per_layer + (ccq_bytes(heads, d_k, dtype) if ccq else 0))


FAMILY = Family(
    cache_layout="packed", cached_chunks=True,
    model_type="gated_deltanet", name="Gated DeltaNet", cpu=True, ccq="ccq_gated_deltanet", ccq_name="CCQ-GDN",
    ccq_models="ccq_eval.models.ccq_models.gated_deltanet",
    doc_note="also with `attn` layers, the GDN hybrids: CCQ on their GDN layers",
    patches=(Patch("fla.layers.gated_deltanet", "chunk_gated_delta_rule", f"{OPS}:chunk_gated_delta_rule"),
             Patch("fla.layers.gated_deltanet", "fused_recurrent_gated_delta_rule",
                   f"{OPS}:fused_recurrent_gated_delta_rule"),
             # its fused q/k/v convolution calls causal_conv1d directly
             Patch("fla.layers.gated_deltanet", "causal_conv1d", "ccq_eval.ops.shared_cpu_forms:causal_conv1d")),
    in_place_steps=(Patch("fla.layers.gated_deltanet", "fused_recurrent_gated_delta_rule",
                          "ccq_eval.ops.gated_deltanet.fused_recurrent:fused_recurrent_gated_delta_rule_in_place"),),
    cache_bytes=cache_bytes,
)
