"""What a task plugin reads from lm-eval's metadata when stock lm-eval runs it. lm-eval hands the data function
``--model_args`` merged with ``--metadata``, so the tokenizer is ``tokenizer`` or else the model's own
``pretrained`` (as lm-eval's RULER tasks read it), and the lengths are ``max_seq_lengths`` or else the suite's
defaults (the paper's)."""

from __future__ import annotations


def tokenizer_source(task: str, tokenizer: str | None, pretrained: str | None) -> str:
    source = tokenizer or pretrained
    if not source or not isinstance(source, str):
        raise ValueError(f"{task}: no tokenizer: pass --model_args pretrained=CKPT, or --metadata "
                         "'{\"tokenizer\": \"PATH\"}' for a model named otherwise")
    return source


def lengths(suite: str, max_seq_lengths) -> list[int]:
    from ccq_eval.suites import get_suite

    if not max_seq_lengths:
        return list(get_suite(suite).default_lengths)
    return [int(length) for length in (max_seq_lengths if isinstance(max_seq_lengths, (list, tuple)) else [max_seq_lengths])]
