"""What the babilong task plugins call when stock lm-eval runs them (``--include_path tasks``): the samples built from
the task metadata as ccq-eval's driver builds them (the same stories, haystack, seed and prompt variant, so the same
records, read back from the cache where either route froze them). Under ccq-eval this is not called: the driver
hands the prompts to the model's engine itself (suites/generating.py)."""

from __future__ import annotations

import datasets

from ccq_eval.data.cache import load_or_build, tokenizer_fingerprint
from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.babilong import data as babilong
from ccq_eval.suites.plugin_args import check_context, lengths, tokenizer_source


def dataset(babilong_task: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=100, seed: int = 0,
            haystack: str | None = None, babilong_prompt: str = "full", data_dir: str = "",
            pretrained: str | None = None, **model_args) -> dict[str, datasets.Dataset]:
    """``babilong_task`` comes from the task YAML's dataset_kwargs, the rest from the metadata (``num_samples``,
    ``seed``, ``haystack``, ``babilong_prompt`` and ``data_dir`` as `ccq-eval run` reads --samples, --seed,
    --haystack, --babilong-prompt and --data-dir)."""
    if babilong_prompt not in babilong.PROMPT_VARIANTS:
        raise ValueError(f"babilong_prompt {babilong_prompt!r}: use one of {', '.join(babilong.PROMPT_VARIANTS)}")
    tok = load_tokenizer(tokenizer_source(babilong_task, tokenizer, pretrained))
    wanted = lengths("babilong", max_seq_lengths)
    check_context(babilong_task, wanted, {**model_args, "pretrained": pretrained}, tok)
    read, ground = babilong.stories(babilong_task, data_dir or None), babilong.background(haystack, data_dir or None)
    samples = int(num_samples) if num_samples else None
    records = []
    for length in wanted:
        key = babilong.dataset_key(babilong_task, read, ground, tokenizer_fingerprint(tok), length, samples, int(seed),
                                   babilong_prompt)
        records += load_or_build(babilong.records_path(key), key, lambda length=length: babilong.build(
            babilong_task.removeprefix("babilong_"), read, ground, tok, length, samples, int(seed), babilong_prompt))[0]
    return {"test": datasets.Dataset.from_list(records)}
