"""Batch N against batch 1: where two decodings of one request part, whether the reference's own logits were tied
there (the two best tokens within a floating-point margin), which a different batch may break either way, or not
(a fault). Used by the engine's tests and benchmarks/generation.py."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ccq_eval.generation.reference import generate_one

# the two best logits closer than this (relative to the larger magnitude) are a tie in float32/bfloat16 arithmetic
TIE_MARGIN = {torch.float64: 1e-9, torch.float32: 1e-4, torch.bfloat16: 2e-2, torch.float16: 5e-3}


@dataclass(frozen=True)
class Parting:
    index: int  # the request
    position: int  # the first generated token where they differ
    margin: float  # the reference's two best logits there, apart by this much (relative)
    tie: bool


def first_difference(a: list[int], b: list[int]) -> int | None:
    for position, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return position
    return None if len(a) == len(b) else min(len(a), len(b))


def partings(model, tokenizer, requests, results) -> list[Parting]:
    """Every request whose engine tokens differ from the batch-1 reference's, with whether a tie explains it."""
    found = []
    for index, (request, result) in enumerate(zip(requests, results)):
        reference, logits = generate_one(model, tokenizer, request)
        position = first_difference(result.tokens, reference.tokens)
        if position is None:
            continue
        if position >= len(logits):  # the engine ran on where the reference stopped: no tie explains it
            found.append(Parting(index, position, float("inf"), False))
            continue
        top = logits[position].double().topk(2).values
        margin = float((top[0] - top[1]) / top.abs().max().clamp(min=1e-30))
        found.append(Parting(index, position, margin, margin <= TIE_MARGIN.get(logits[position].dtype, 1e-4)))
    return found
