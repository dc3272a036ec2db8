"""What the longbench task plugins call when stock lm-eval runs them: the prompts built (middle-truncated
once) from the task metadata. Under ccq-eval this is not called: the driver builds the same prompts from the same data
module and hands them to the model's engine itself (suites/generating.py)."""

from __future__ import annotations

import datasets

from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.plugin_args import check_context, lengths, tokenizer_source
from ccq_eval.suites.longbench import data


def dataset(longbench_key: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
            data_dir: str = "", pretrained: str | None = None, **model_args) -> dict[str, datasets.Dataset]:
    """``longbench_key`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    task = f"longbench_{longbench_key}"
    tok = load_tokenizer(tokenizer_source(task, tokenizer, pretrained))
    wanted = lengths("longbench", max_seq_lengths)
    check_context(task, wanted, {**model_args, "pretrained": pretrained}, tok)
    records = data.read_records(data.local_path(longbench_key, data_dir or None))
    docs = []
    for length in wanted:
        built = data.build(longbench_key, records, tok, length, int(num_samples) if num_samples else None)[0]
        docs += [{**doc, "max_length": length} for doc in built]  # each budget reports on its own (per_length)
    return {"test": datasets.Dataset.from_list(docs)}
