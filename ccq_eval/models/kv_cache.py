"""Amortised O(1) appends to the key/value cache of fla's attention layers (Transformer++, hybrids).

fla 0.6 appends each decoding step with ``torch.cat([cached, new])`` (``update_attention_cache``), which
copies the whole cache every step: O(T) per token, O(T^2) per generation. Here the cache lives in a buffer
with headroom (grown by a quarter when full) and each step writes the new keys in place and returns a view
of the filled part: the same tensors' values, bit for bit, with a copy only when the buffer grows.

A view extends its buffer in place only if it ends at the buffer's frontier (the longest view handed out),
so two continuations of one cache never write over each other: the second one copies. Sliding windows
keep fla's own rule (their cache is bounded already).
"""

from __future__ import annotations

import torch

HEADROOM_FRACTION, MIN_HEADROOM = 0.25, 256
_ORIGINAL = None


def _append(cached: torch.Tensor, new: torch.Tensor) -> torch.Tensor:
    filled, length = cached.shape[1], new.shape[1]
    buffer = getattr(cached, "_ccq_buffer", None)
    reusable = (buffer is not None and getattr(buffer, "_ccq_frontier", -1) == filled
                and buffer.shape[1] >= filled + length and cached.data_ptr() == buffer.data_ptr()
                and new.dtype == buffer.dtype and new.device == buffer.device
                and new.shape[0] == buffer.shape[0] and new.shape[2:] == buffer.shape[2:])
    if not reusable:
        capacity = filled + length + max(MIN_HEADROOM, int(HEADROOM_FRACTION * (filled + length)))
        buffer = torch.empty((cached.shape[0], capacity, *cached.shape[2:]), dtype=cached.dtype, device=cached.device)
        buffer[:, :filled] = cached
    buffer[:, filled: filled + length] = new
    buffer._ccq_frontier = filled + length
    view = buffer[:, : filled + length]
    view._ccq_buffer = buffer
    return view


def update_attention_cache(cached_state, new_state, window_size):
    """fla's ``update_attention_cache`` with in-place appends for unbounded (window-less) caches."""
    if window_size is not None:
        return _ORIGINAL(cached_state, new_state, window_size)
    return [_append(cached, new) for cached, new in zip(cached_state, new_state, strict=False)]


def install_growing_kv_cache() -> None:
    """Idempotent; fla's cache layer calls the module-level name, which is replaced."""
    global _ORIGINAL
    import fla.models.cache_utils as cache_utils

    if cache_utils.update_attention_cache is not update_attention_cache:
        _ORIGINAL = cache_utils.update_attention_cache
        cache_utils.update_attention_cache = update_attention_cache
