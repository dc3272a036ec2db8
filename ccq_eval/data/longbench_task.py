"""What the longbench task plugins call: metadata from the runner -> the prompts as HF datasets."""

from __future__ import annotations

import datasets

from ccq_eval.data import longbench
from ccq_eval.data.sniah_task import _tokenizer


def dataset_for_task(key: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
                     data_dir: str = "", **_) -> dict[str, datasets.Dataset]:
    if not tokenizer or not max_seq_lengths:
        raise ValueError(f"longbench_{key}: needs metadata 'tokenizer' and 'max_seq_lengths' (run it through ccq-eval)")
    path = longbench.local_path(key, data_dir or None)
    docs = []
    for length in max_seq_lengths:
        docs += longbench.build(key, path, _tokenizer(tokenizer), int(length), int(num_samples) if num_samples else None)[0]
    return {"test": datasets.Dataset.from_list(docs)}
