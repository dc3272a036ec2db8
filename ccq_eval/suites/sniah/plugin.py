"""What the sniah task plugins call when stock lm-eval runs them (``--include_path``): the data built from the
task metadata, or read back from the cache where an earlier run froze it. Under ccq-eval this is not called:
the driver builds the same records and hands their prompts to the model's engine itself (suites/generating.py).
The multi-needle and ruler plugins call the same ``dataset_from_metadata`` with their own generator.
"""

from __future__ import annotations

import datasets

from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.plugin_args import check_context, lengths, tokenizer_source
from ccq_eval.suites.sniah import data as sniah
from ccq_eval.suites.sniah.haystack import load_haystack


def dataset(sniah_task: str, **metadata) -> dict[str, datasets.Dataset]:
    """``sniah_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    return dataset_for_task(sniah_task, **metadata)


def dataset_for_task(task: str, **metadata) -> dict[str, datasets.Dataset]:
    return dataset_from_metadata(sniah, "sniah", task, **metadata)


def dataset_from_metadata(generator, suite: str, task: str, tokenizer: str | None = None, max_seq_lengths=None,
                          num_samples: int = 500, seed: int = 0, haystack: str | None = None,
                          pretrained: str | None = None, source=None, **model_args) -> dict[str, datasets.Dataset]:
    """``generator``: the data module (VARIANTS, load_or_generate) of ``suite``; ``source``: what it reads in place
    of essays (RULER's QA documents), loaded by the caller; ``model_args``: the rest of lm-eval's metadata
    (``max_length`` among them)."""
    tok = load_tokenizer(tokenizer_source(task, tokenizer, pretrained))
    wanted = lengths(suite, max_seq_lengths)
    check_context(task, wanted, {**model_args, "pretrained": pretrained}, tok)
    hay = load_haystack(haystack or None) if generator.VARIANTS[task].haystack == "essay" else source
    records = []
    for length in wanted:
        records += generator.load_or_generate(task, tok, length, int(num_samples), int(seed), hay)[0]
    return {"test": datasets.Dataset.from_list(records)}
