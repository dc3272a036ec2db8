"""The token totals a packed prefill is padded to on CUDA, so that a run compiles and tunes fla's kernels once, in its
warm-up, and never inside a unit.

A packed prefill is one sequence of T tokens (every prompt, back to back, split by ``cu_seqlens``). What makes a GPU
compile or tune again depends on T in two ways: Triton specialises a kernel's integer arguments on whether they divide
by 16 (the short convolution's T, the gates' element count), and fla's layer norm tunes itself per bucket of
``cdiv(T, 2048)`` (``fla/modules/norm/layernorm.py``; its gated norm and L2 norm per ``cdiv(T, 65536)``, which the
first determines). So T is padded, by a sequence of its own behind the prompts (its logits and cache row are dropped;
the kernels never mix sequences, so no real token's logit changes):

- always to a multiple of 16, and to at least 128 (from 65 tokens on, fla's GLA and Gated DeltaNet layers take their
  chunked path, as every longer prefill does);
- into one of a fixed set of norm buckets: 1..8, then four a doubling (10, 12, 14, 16, 20, 24, 28, 32, ...). A total
  whose bucket is in the set is padded by at most 15 tokens; one in a gap moves to the start of the next bucket of the
  set, at most a quarter more tokens. A run of batch B at length L meets at most 4 log2(B L / 8,192) + 8 buckets (28 at
  batch 64 and 8K), each compiled once by the warm-up (``warmup_totals``)."""

from __future__ import annotations

ALIGN = 16  # Triton specialises integer arguments on divisibility by 16
BUCKET = 2048  # fla's layer norm tunes per cdiv(T, 2048)
SMALLEST = 128  # above fla's fused-recurrent threshold for a prefill (64 tokens)


def _buckets() -> list[int]:
    """The norm buckets padded totals fall in: 1..8, then four a doubling (10, 12, 14, 16, 20, ...)."""
    found, base = list(range(1, 9)), 2
    while found[-1] < 1 << 24:
        found += [m * base for m in (5, 6, 7, 8)]
        base *= 2
    return found


BUCKETS = _buckets()


def _aligned(total: int) -> int:
    return max(SMALLEST, -(-total // ALIGN) * ALIGN)


def padded_total(total: int) -> int:
    """The total a packed prefill of ``total`` tokens is padded to."""
    aligned = _aligned(total)
    bucket = -(-aligned // BUCKET)
    if bucket in BUCKETS:
        return aligned
    return BUCKET * (next(b for b in BUCKETS if b > bucket) - 1) + ALIGN  # the start of the next bucket of the set


def warmup_totals(most: int) -> list[int]:
    """One total in every bucket a run whose packed prefills hold at most ``most`` tokens can meet, ascending (every
    multiple of 16 in one bucket meets the same kernels)."""
    top = padded_total(most)
    return [BUCKET * b for b in BUCKETS if BUCKET * b < top] + [top]
