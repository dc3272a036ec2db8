"""What a suite evaluates: an lm-eval LM over a loaded checkpoint, its tokenizer and provenance."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ccq_eval.run.request import RunRequest, ccq_overrides


@dataclass
class Evaluand:
    """An lm-eval LM, its tokenizer (and a folder it can be reloaded from), and provenance."""

    lm: object
    tokenizer: object
    tokenizer_path: str
    provenance: dict


def load_evaluand(request: RunRequest, max_length: int) -> Evaluand:
    """The default: a checkpoint through load_model, wrapped for lm-eval with an explicit budget."""
    from ccq_eval.lm.batching import auto_batch_size
    from ccq_eval.lm.wrapper import CCQEvalLM, distributed_rank
    from ccq_eval.models.loading import load_model

    device = request.device
    rank, world = distributed_rank()
    if world > 1 and device in ("auto", "cuda"):  # one GPU per rank under accelerate launch / torchrun
        import torch

        device = f"cuda:{int(os.environ.get('LOCAL_RANK', rank))}" if torch.cuda.is_available() else "cpu"
    model, tokenizer, provenance = load_model(request.model, device=device, dtype=request.dtype,
                                              allow_pickle=request.allow_pickle,
                                              ccq_overrides=ccq_overrides(request) or None)
    batch_size = request.batch_size
    if batch_size == "auto":
        batch_size = auto_batch_size(model, max_length, provenance["config"].get("vocab_size") or len(tokenizer))
    provenance["batch_size"] = batch_size
    lm = CCQEvalLM(model, tokenizer, max_length=max_length, batch_size=batch_size)
    return Evaluand(lm=lm, tokenizer=tokenizer, tokenizer_path=provenance["path"], provenance=provenance)
