"""What the sniah task plugins call: metadata from the runner -> the frozen dataset as HF datasets."""

from __future__ import annotations

from functools import lru_cache

import datasets

from ccq_eval.data.haystack import load_haystack
from ccq_eval.data.sniah import VARIANTS, load_or_generate


@lru_cache(maxsize=4)
def _tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=False)


def dataset_for_task(task: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples: int = 500,
                     seed: int = 0, haystack: str | None = None, **_) -> dict[str, datasets.Dataset]:
    if not tokenizer or not max_seq_lengths:
        raise ValueError(f"{task}: the task needs metadata 'tokenizer' and 'max_seq_lengths' (run it through ccq-eval)")
    hay = load_haystack(haystack or None) if VARIANTS[task].haystack == "essay" else None
    records = []
    for length in max_seq_lengths:
        records += load_or_generate(task, _tokenizer(tokenizer), int(length), int(num_samples), int(seed), hay)[0]
    return {"test": datasets.Dataset.from_list(records)}
