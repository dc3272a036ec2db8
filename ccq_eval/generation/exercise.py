"""A model's calls made once, untimed, as the suites make them: the engine's prefill of a batch of prompts and a few
greedy cached steps (generation/layouts.py: packed through fla's cu_seqlens, separate or padded; on CUDA the step's
graph captured on the first step), or lm-eval's scoring forward. A run on CUDA makes its suites' calls before its
first unit so that fla's kernels compile there (run/kernel_warmup.py, Driver.exercise)."""

from __future__ import annotations

import torch

DECODE_STEPS = 4  # the decoding kernels (fused recurrent, the short convolution's update) compile on the first step


@torch.no_grad()
def prefill_and_decode(model, length: int, batch: int, steps: int = DECODE_STEPS) -> None:
    from ccq_eval.generation.engine import stepper
    from ccq_eval.generation.layouts import layout_for

    prompts = random_prompts(model, length, batch).tolist()
    layout = layout_for(model)
    state, logits = layout.prefill([tuple(row) for row in prompts])
    step = stepper(layout, state, len(prompts))
    tokens = logits.argmax(-1).tolist()
    for _ in range(1 + steps):
        tokens = step(tokens).argmax(-1).tolist()


@torch.no_grad()
def forward_without_cache(model, length: int, batch: int) -> None:
    """The call lm-eval's HF model scores log-likelihoods with: one forward of a batch, no cache passed in
    (HFLM._model_call)."""
    model(random_prompts(model, length, batch)).logits


def random_prompts(model, length: int, batch: int) -> torch.Tensor:
    """``batch`` x ``length`` token ids on the model's device (seeded: the same every run)."""
    device = next(model.parameters()).device
    generator = torch.Generator().manual_seed(0)
    return torch.randint(0, model.config.vocab_size, (batch, length), generator=generator).to(device)
