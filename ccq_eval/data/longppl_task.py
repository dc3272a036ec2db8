"""What the longppl task plugins call: the same selected sequences as the one-pass engine, truncated
to one length and handed to lm-eval as text (it re-tokenizes, so the round trip is checked)."""

from __future__ import annotations

import math

import datasets

from ccq_eval.data import longppl
from ccq_eval.data.sniah_task import _tokenizer


def dataset_for_corpus(corpus: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
                       l_max: int | None = None, data_dir: str = "", **_) -> dict[str, datasets.Dataset]:
    if not tokenizer or not max_seq_lengths or not l_max:
        raise ValueError(f"longppl_{corpus}: needs metadata 'tokenizer', 'max_seq_lengths' and 'l_max' (run it through ccq-eval)")
    tok = _tokenizer(tokenizer)
    selection = longppl.select(corpus, longppl.local_path(corpus, data_dir or None), tok, int(l_max),
                               int(num_samples) if num_samples else None)
    docs = []
    for length in max_seq_lengths:
        for index, ids in enumerate(selection.sequences):
            scored = ids[1 : int(length) + 1]
            text = tok.decode(scored)
            if tok(text, add_special_tokens=False)["input_ids"] != scored:
                raise ValueError(f"longppl_{corpus}: sequence {index} does not survive decode/encode with this "
                                 "tokenizer; use ccq-eval's one-pass engine")
            docs.append({"text": text, "n_tokens": len(scored), "index": index, "max_length": int(length)})
    return {"test": datasets.Dataset.from_list(docs)}


def process_results(doc: dict, results) -> dict:
    loglikelihood = results[0][0] if isinstance(results[0], (list, tuple)) else results[0]
    return {"perplexity": (float(loglikelihood), doc["n_tokens"])}


def token_perplexity(items) -> float:
    """exp(sum of NLL / scored tokens), pooled over sequences (token-weighted)."""
    return math.exp(-sum(ll for ll, _ in items) / sum(n for _, n in items))
