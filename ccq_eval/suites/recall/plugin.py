"""What the recall task plugins call when stock lm-eval runs them: the prompts built (each document cut once) from
the task metadata. Under ccq-eval the driver hands lm-eval the prompts it built in process."""

from __future__ import annotations

import datasets

from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.plugin_args import check_context, lengths, tokenizer_source
from ccq_eval.suites.recall import data
from ccq_eval.suites.recall.tasks import MAX_GEN


def dataset(recall_task: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
            data_dir: str = "", pretrained: str | None = None, **model_args) -> dict[str, datasets.Dataset]:
    """``recall_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata. A prompt runs a few
    tokens past the cut's budget (the question follows the document): ``max_length`` must hold the longest prompt
    and its 48 tokens, which check_context verifies."""
    tok = load_tokenizer(tokenizer_source(recall_task, tokenizer, pretrained))
    records = data.read_records(recall_task, data_dir or None)
    docs = []
    for length in lengths("recall", max_seq_lengths):
        docs += data.build(recall_task, records, tok, length, int(num_samples) if num_samples else None)
    need = max(doc["prompt_tokens"] for doc in docs) + MAX_GEN
    check_context(recall_task, [need], {**model_args, "pretrained": pretrained}, tok)
    return {"test": datasets.Dataset.from_list(docs)}
