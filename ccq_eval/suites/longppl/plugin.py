"""What the longppl task plugins call (the lm-eval cross-check): the driver's frozen documents, or,
run through lm-eval alone (no ``frozen`` metadata), the same selection built from the metadata."""

from __future__ import annotations

import math

import datasets

from ccq_eval.data.cache import read_frozen
from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.longppl import corpora


def dataset_for_corpus(corpus: str, frozen: str | None = None, tokenizer: str | None = None, max_seq_lengths=None,
                       num_samples=None, l_max: int | None = None, data_dir: str = "",
                       **_) -> dict[str, datasets.Dataset]:
    if frozen:
        return {"test": datasets.Dataset.from_list(read_frozen(frozen, f"longppl_{corpus}"))}
    if not tokenizer or not max_seq_lengths or not l_max:
        raise ValueError(f"longppl_{corpus}: needs metadata 'tokenizer', 'max_seq_lengths' and 'l_max' (run it through ccq-eval)")
    tok = load_tokenizer(tokenizer)
    selection = corpora.select(corpus, corpora.local_path(corpus, data_dir or None), tok, int(l_max),
                               int(num_samples) if num_samples else None)
    docs = []
    for length in max_seq_lengths:
        docs += corpora.lm_eval_docs(selection, tok, int(length))
    return {"test": datasets.Dataset.from_list(docs)}


def process_results(doc: dict, results) -> dict:
    loglikelihood = results[0][0] if isinstance(results[0], (list, tuple)) else results[0]
    return {"perplexity": (float(loglikelihood), doc["n_tokens"])}


def token_perplexity(items) -> float:
    """exp(sum of NLL / scored tokens), pooled over sequences (token-weighted)."""
    return math.exp(-sum(ll for ll, _ in items) / sum(n for _, n in items))
