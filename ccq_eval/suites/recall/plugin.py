"""What the recall task plugins call when stock lm-eval runs them: the prompts built (each document cut once) from
the task metadata. Under ccq-eval this is not called: the driver builds the same prompts from the same data module
and hands them to the model's engine itself (suites/generating.py)."""

from __future__ import annotations

import datasets

from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.lm.context import check_lengths_fit, model_context
from ccq_eval.suites.plugin_args import lengths, tokenizer_source
from ccq_eval.suites.recall import data
from ccq_eval.suites.recall.tasks import MAX_GEN


def dataset(recall_task: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
            data_dir: str = "", pretrained: str | None = None, **model_args) -> dict[str, datasets.Dataset]:
    """``recall_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata. A prompt can run a
    few tokens past its length (the question follows the cut document), so what each length needs is known once
    its prompts are built: the longest prompt and its 48 tokens must fit the context lm-eval gives the model, or
    nothing runs."""
    tok = load_tokenizer(tokenizer_source(recall_task, tokenizer, pretrained))
    records = data.read_records(recall_task, data_dir or None)
    built = {length: data.build(recall_task, records, tok, length, int(num_samples) if num_samples else None)
             for length in lengths("recall", max_seq_lengths)}
    needs = {length: max(doc["prompt_tokens"] for doc in docs) + MAX_GEN for length, docs in built.items()}
    check_lengths_fit(recall_task, needs, model_context({**model_args, "pretrained": pretrained}, tok))
    return {"test": datasets.Dataset.from_list([doc for docs in built.values() for doc in docs])}
