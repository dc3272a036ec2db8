"""A model's calls made once, untimed, as the suites make them: the engine's prefill of a batch of prompts and a few
greedy cached steps (generation/layouts.py: packed through fla's cu_seqlens, separate or padded; on CUDA the step's
graph captured on the first step), or lm-eval's scoring forward. A run on CUDA makes its suites' calls before its
first unit so that fla's kernels compile there (run/kernel_warmup.py, Driver.exercise)."""

from __future__ import annotations

import torch

DECODE_STEPS = 4  # the decoding kernels (fused recurrent, the short convolution's update) compile on the first step


@torch.no_grad()
def prefill_and_decode(model, length: int, batch: int, steps: int = DECODE_STEPS) -> None:
    """The engine's calls for prompts of up to ``length`` tokens at batch size ``batch``: where packed prefills are
    padded to fixed totals (packing.py, on CUDA), a prefill at every total such a run can meet; then ``batch`` prompts
    prefilled and decoded a few steps in ``batch`` fixed slots (on CUDA the step's graph captured)."""
    from ccq_eval.generation.engine import stepper
    from ccq_eval.generation.layouts import layout_for
    from ccq_eval.generation.packing import warmup_totals

    layout = layout_for(model)
    if getattr(layout, "pad", False):
        for total in warmup_totals(length * batch)[:-1]:  # the last: the prefill below
            layout.prefill(split(random_prompts(model, total, 1)[0].tolist(), length))
    prompts = random_prompts(model, length, batch).tolist()
    state, logits = layout.prefill([tuple(row) for row in prompts])
    step = stepper(layout, state, len(prompts))
    tokens = logits.argmax(-1).tolist()
    for _ in range(1 + steps):
        tokens = step(tokens).argmax(-1).tolist()


def split(tokens: list[int], length: int) -> list[tuple[int, ...]]:
    """``tokens`` as prompts of ``length`` tokens (the last one shorter)."""
    return [tuple(tokens[i:i + length]) for i in range(0, len(tokens), length)]


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
