"""The cache's size counted from the config, for the families the paper compares: what the measured bytes
must equal. Per layer, batch 1, after L tokens:

- GLA: the state H x d_k x d_v (d_k = hidden x expand_k / H, d_v = hidden x expand_v / H) in float32, plus the
  short-convolution state (q, k and v channels x conv_size) in the model's dtype.
- Gated DeltaNet: HV x d_k x d_v (d_k = head_dim, d_v = head_dim x expand_v) in float32, plus the
  short-convolution state.
- CCQ adds its running key statistics: a count (int64) and, per head, the mean (d_k) and covariance (d_k^2)
  in float32: the paper's "one extra d_k x d_k matrix and one d_k vector per head".
- Transformer (fla's and transformers' decoder-only models): keys and values, 2 x kv_heads x head_dim x L in
  the model's dtype: the one cache that grows with L.

States are float64 where the model is (the CPU backend keeps the inputs' precision). None for what this does
not count (hybrids, grouped GLA heads, other families): the table then shows the measured bytes alone.
"""

from __future__ import annotations

DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}
ATTENTION_TYPES = {"transformer", "llama", "mistral", "qwen2", "qwen3", "gpt_neox", "gemma", "phi3", "olmo", "olmo2"}


def analytic_cache_bytes(config: dict, length: int, dtype: str) -> int | None:
    kind = config.get("model_type", "")
    act = DTYPE_BYTES.get(dtype)
    if act is None or config.get("attn"):  # hybrids interleave attention layers: not counted here
        return None
    state = 8 if dtype == "float64" else 4
    layers, hidden = config["num_hidden_layers"], config["hidden_size"]
    heads = config.get("num_heads") or config.get("num_attention_heads")
    if kind in ATTENTION_TYPES:
        kv_heads = config.get("num_kv_heads") or config.get("num_key_value_heads") or heads
        head_dim = config.get("head_dim") or hidden // heads
        return layers * 2 * kv_heads * head_dim * length * act
    ccq = kind.startswith("ccq_")
    base = kind.removeprefix("ccq_")
    if base == "gla":
        if config.get("num_kv_heads") not in (None, heads):
            return None
        key_dim, value_dim = int(hidden * config["expand_k"]), int(hidden * config["expand_v"])
        d_k = key_dim // heads
        per_layer = heads * d_k * (value_dim // heads) * state
    elif base == "gated_deltanet":
        v_heads = config.get("num_v_heads") or heads
        d_k = config["head_dim"]
        d_v = int(d_k * config["expand_v"])
        key_dim, value_dim = heads * d_k, v_heads * d_v
        per_layer = v_heads * d_k * d_v * state
    else:
        return None
    if config.get("use_short_conv"):
        per_layer += (2 * key_dim + value_dim) * config["conv_size"] * act
    if ccq:
        per_layer += 8 + heads * (d_k + d_k * d_k) * state
    return layers * per_layer
