"""What a suite evaluates: an lm-eval LM over a loaded checkpoint, its tokenizer and provenance."""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from ccq_eval.run.request import RunRequest, ccq_overrides


@dataclass
class Evaluand:
    """An lm-eval LM, its tokenizer (and a folder it can be reloaded from), and provenance."""

    lm: object
    tokenizer: object
    tokenizer_path: str
    provenance: dict
    compilations: list = field(default_factory=list)  # what resolving --batch-size auto compiled and took


def load_evaluand(request: RunRequest, max_length: int) -> Evaluand:
    """The default: a checkpoint through load_model, wrapped for lm-eval with an explicit budget."""
    from ccq_eval.lm.batching import default_batch_size
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
    batch_size, probes = request.batch_size, []
    if batch_size is None:
        batch_size = default_batch_size(model.device)
    elif batch_size == "auto":
        probes.append(_probe(model, max_length))
        batch_size = probes[-1].batch
    provenance["batch_size"] = batch_size
    lm = CCQEvalLM(model, tokenizer, max_length=max_length, batch_size=batch_size)
    return Evaluand(lm=lm, tokenizer=tokenizer, tokenizer_path=provenance["path"], provenance=provenance,
                    compilations=probes)


def _probe(model, max_length: int):
    """``--batch-size auto`` resolved with the engine's prefill, timed as the kernel warm-up is (on a GPU it compiles
    the run's own prefill kernels): the warm-up's record, with the batch size found."""
    from dataclasses import replace

    from ccq_eval.lm.batching import auto_batch_size
    from ccq_eval.run.kernel_warmup import compile_kernels

    found = []
    timed = compile_kernels(model, max_length, 0, lambda m, length, _: found.append(auto_batch_size(m, length)),
                            "auto batch size probe")
    return replace(timed, batch=found[0])
