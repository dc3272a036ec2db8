"""A tokenizer folder loaded once per process (what a plugin needs when it runs outside ccq-eval)."""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=4)
def load_tokenizer(path: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, trust_remote_code=False)
