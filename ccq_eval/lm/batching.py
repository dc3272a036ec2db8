"""``--batch-size auto``: 1 on the CPU (the batch size is part of every unit's identity, and stores written
before ``auto`` existed hold batch 1; on this 2-core machine batch 16 is 1.79x faster, benchmarks/batch_size.py,
so pass it explicitly there), and on a GPU the largest
power of two up to 64 whose forward pass over the suite's longest prompts fits in memory, found by trying
(as lm-eval's own ``auto`` does). lm-eval already sorts each request type by length, longest first, so the
first batch is the largest one the run will see."""

from __future__ import annotations

from typing import Callable

MAX_AUTO_BATCH = 64


def largest_fitting(fits: Callable[[int], bool], cap: int = MAX_AUTO_BATCH) -> int:
    """The largest power of two <= cap for which fits() holds, doubling from 1 (1 even if nothing fits)."""
    batch = 1
    while batch * 2 <= cap and fits(batch * 2):
        batch *= 2
    return batch


def auto_batch_size(model, max_length: int, vocab_size: int) -> int:
    import torch

    if model.device.type != "cuda":
        return 1

    def fits(batch: int) -> bool:
        try:
            with torch.no_grad():
                ids = torch.randint(0, vocab_size, (batch, max_length), device=model.device)
                model(ids, use_cache=True, logits_to_keep=1)  # the prefill that decoding starts with
            torch.cuda.synchronize()
            return True
        except torch.cuda.OutOfMemoryError:
            return False
        finally:
            torch.cuda.empty_cache()

    return largest_fitting(fits)
