"""What the longbench task plugins call: the prompts the driver built (middle-truncated once) and
froze, read by path; run through lm-eval alone (no ``frozen`` metadata), built from the metadata."""

from __future__ import annotations

import datasets

from ccq_eval.data.cache import read_frozen
from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.longbench import data


def dataset(longbench_key: str, frozen: str | None = None, tokenizer: str | None = None, max_seq_lengths=None,
            num_samples=None, data_dir: str = "", **_) -> dict[str, datasets.Dataset]:
    """``longbench_key`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    if frozen:
        return {"test": datasets.Dataset.from_list(read_frozen(frozen, f"longbench_{longbench_key}"))}
    if not tokenizer or not max_seq_lengths:
        raise ValueError(f"longbench_{longbench_key}: needs metadata 'tokenizer' and 'max_seq_lengths' "
                         "(run it through ccq-eval)")
    records = data.read_records(data.local_path(longbench_key, data_dir or None))
    docs = []
    for length in max_seq_lengths:
        docs += data.build(longbench_key, records, load_tokenizer(tokenizer), int(length),
                           int(num_samples) if num_samples else None)[0]
    return {"test": datasets.Dataset.from_list(docs)}
