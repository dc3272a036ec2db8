"""What a built model's cache can do, where the suites must adapt to it."""

from __future__ import annotations


def takes_cached_chunks(model) -> bool:
    """Whether the model's cache takes several new tokens per call after a prefill. fla's Mamba and
    Mamba2 layers (and so Samba) accept one new token per cached step only ("cached decoding only
    supports a single new token per step"), on their torch path and mamba_ssm's alike."""
    from fla.layers.mamba import Mamba
    from fla.layers.mamba2 import Mamba2

    return not any(isinstance(module, (Mamba, Mamba2)) for module in model.modules())
