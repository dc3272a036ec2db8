"""The batch size when none is given (1 on the CPU, ``CUDA_DEFAULT`` on a GPU: a fixed size, so the kernels a run
compiles are known before it starts), and ``--batch-size auto``: 1 on the CPU (the batch size is part of every
unit's identity, and stores written before ``auto`` existed hold batch 1), and on a GPU the largest power of two up
to 64 whose prefill at the run's longest length fits in memory, found by trying the engine's own prefill
(generation/layouts.py: packed and padded to its fixed totals where the model allows it), so the kernels the probe
compiles are the run's own. It is timed and recorded beside the kernel warm-up."""

from __future__ import annotations

from typing import Callable

MAX_AUTO_BATCH = 64
CUDA_DEFAULT = 16  # 16 x 16K tokens of a 1.3B model's prefill fit a 40 GB GPU with room to spare


def largest_fitting(fits: Callable[[int], bool], cap: int = MAX_AUTO_BATCH) -> int:
    """The largest power of two <= cap for which fits() holds, doubling from 1 (1 even if nothing fits)."""
    batch = 1
    while batch * 2 <= cap and fits(batch * 2):
        batch *= 2
    return batch


def default_batch_size(device) -> int:
    return CUDA_DEFAULT if str(device).startswith("cuda") else 1


def auto_batch_size(model, max_length: int) -> int:
    import torch

    from ccq_eval.generation.exercise import random_prompts
    from ccq_eval.generation.layouts import layout_for

    if model.device.type != "cuda":
        return 1
    layout = layout_for(model)

    def fits(batch: int) -> bool:
        try:
            with torch.no_grad():
                layout.prefill([tuple(row) for row in random_prompts(model, max_length, batch).tolist()])
            torch.cuda.synchronize()
            return True
        except torch.cuda.OutOfMemoryError:
            return False
        finally:
            torch.cuda.empty_cache()

    return largest_fitting(fits)
