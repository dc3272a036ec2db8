"""What a built model's cache can do, where the suites must adapt to it."""

from __future__ import annotations

import functools
import logging


def takes_cached_chunks(model) -> bool:
    """Whether the model's cache takes several new tokens per call after a prefill, as its family states
    (``Family.cached_chunks``): fla's Mamba and Mamba2 layers (and so Samba) accept one new token per cached step
    only. A family that states nothing is asked one pass (correct for every model), with a note."""
    from ccq_eval.families import family_of

    declared = family_of(model).cached_chunks
    if declared is None:
        _note_unstated_chunks(model.config.model_type)
        return False
    return declared


@functools.lru_cache(maxsize=None)
def _note_unstated_chunks(model_type: str) -> None:
    """Said once per model_type (perplexity asks once per sequence)."""
    logging.getLogger(__name__).warning("%s: its family does not say whether its cache takes several tokens a call; "
                                        "perplexity runs the model once over each sequence; set Family.cached_chunks",
                                        model_type)


def learned_positions(model) -> tuple[str, int] | None:
    """(module name, positions) where the model has a learned absolute position table (GPT-2's ``wpe``, OPT's
    ``embed_positions``): a sequence longer than the table indexes past it. None for RoPE, ALiBi and the
    recurrent families, which take any length (however well they extrapolate)."""
    import torch

    tokens = model.get_input_embeddings()
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.Embedding) and module is not tokens and (
                "pos" in name.rsplit(".", 1)[-1] or name.endswith("wpe")):
            offset = getattr(module, "offset", 0)  # OPT's table starts two rows in
            return name, module.num_embeddings - offset
    return None


def rotary_positions(config: dict) -> int | None:
    """The trained positions (``max_position_embeddings``) of a model whose attention rotates by position (RoPE,
    in the config's rope / rotary fields or a hybrid's ``attn``), or None. Past them RoPE extrapolates without a
    word, so a length beyond them is recorded with its unit (recurrent families carry the field but no positions)."""
    positions = config.get("max_position_embeddings")
    attn = config.get("attn") if isinstance(config.get("attn"), dict) else {}
    rotary = any(key.startswith("rope") or "rotary" in key for key in (*config, *attn))
    return positions if rotary and isinstance(positions, int) and positions > 0 else None
