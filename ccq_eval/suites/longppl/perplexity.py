"""Token NLL of long sequences in one pass, chunk by chunk with the model's cache.

Logits are never materialised for the whole sequence x vocabulary: each chunk's logits are turned
into NLL and dropped. Recurrent models carry their state across chunks through fla's cache (the
same cache decoding uses); attention models carry their KV cache. Position t's logits score token
t + 1: the sequence's first token is context only (BOS), every other token is scored.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


class NonFiniteLoss(RuntimeError):
    """A NaN or infinite NLL: the number cannot be trusted and is not stored."""


@torch.no_grad()
def sequence_nll(model, ids: list[int] | torch.Tensor, chunk_size: int = 2048) -> torch.Tensor:
    """NLL (float64) of ids[1:], each predicted from everything before it; ``len(ids) - 1`` values.

    A model whose cache takes no multi-token chunks (models/capabilities.py: Mamba, Mamba2, Samba)
    runs its base model once over the whole sequence; the output head still goes chunk by chunk."""
    from ccq_eval.models.capabilities import takes_cached_chunks

    ids = torch.as_tensor(ids, dtype=torch.long).view(1, -1)
    device = next(model.parameters()).device
    ids = ids.to(device)
    total = ids.shape[1] - 1
    if not takes_cached_chunks(model):
        return _one_pass_nll(model, ids, chunk_size)
    cache, pieces = None, []
    for start in range(0, total, chunk_size):
        end = min(start + chunk_size, total)
        out = model(input_ids=ids[:, start:end], past_key_values=cache, use_cache=True)
        cache = out.past_key_values
        pieces.append(_nll(out.logits[0], ids[0, start + 1 : end + 1]))
    return torch.cat(pieces)


def _nll(logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(logits.float(), targets, reduction="none").double().cpu()


def _one_pass_nll(model, ids: torch.Tensor, chunk_size: int) -> torch.Tensor:
    total = ids.shape[1] - 1
    hidden = model.base_model(input_ids=ids[:, :total], use_cache=False)[0]
    head = model.get_output_embeddings()
    return torch.cat([_nll(head(hidden[0, start : start + chunk_size]), ids[0, start + 1 : start + 1 + chunk_size])
                      for start in range(0, total, chunk_size)])


def prefix_nll_sums(nll: torch.Tensor, lengths: list[int]) -> dict[int, float]:
    """{L: NLL sum over the first L scored tokens} from one pass (prefix sums)."""
    cumulative = nll.cumsum(0)
    return {L: float(cumulative[L - 1]) for L in lengths}


def check_finite(nll: torch.Tensor, name: str) -> None:
    if not torch.isfinite(nll).all():
        position = int((~torch.isfinite(nll)).nonzero()[0])
        raise NonFiniteLoss(f"{name}: non-finite loss at scored token {position}")


def bucket_sums(nll: torch.Tensor, bucket: int) -> list[float]:
    """NLL summed per position bucket (the per-position view: [0, bucket), [bucket, 2 bucket), ...)."""
    return [float(nll[i : i + bucket].sum()) for i in range(0, len(nll), bucket)]


def perplexity(nll_sum: float, tokens: int) -> float:
    return math.exp(nll_sum / tokens)
