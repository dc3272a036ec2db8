"""What the longppl task plugins call when lm-eval runs them: the selection built from the task metadata, and the
per-document scoring and pooling. Stock lm-eval calls them through ``--include_path``; so does ccq-eval's
``--engine lm-eval`` (the cross-check), which names the plugin to lm-eval's TaskManager with the same metadata. The
default one-pass engine does not come here."""

from __future__ import annotations

import math

import datasets

from ccq_eval.data.tokenizers import load_tokenizer
from ccq_eval.suites.plugin_args import at_length, check_context, lengths, per_length, tokenizer_source
from ccq_eval.suites.longppl import corpora


def dataset(corpus: str, **metadata) -> dict[str, datasets.Dataset]:
    """``corpus`` comes from the task YAML's dataset_kwargs, the rest from the metadata."""
    return dataset_for_corpus(corpus, **metadata)


def dataset_for_corpus(corpus: str, tokenizer: str | None = None, max_seq_lengths=None, num_samples=None,
                       l_max: int | None = None, data_dir: str = "", pretrained: str | None = None,
                       **model_args) -> dict[str, datasets.Dataset]:
    """``l_max`` (the scored sequences' length): the largest length when not given, as in a ccq-eval run. A length
    past the model's context would be scored in lm-eval's rolling windows of that context, not in one pass: refused."""
    task = f"longppl_{corpus}"
    tok = load_tokenizer(tokenizer_source(task, tokenizer, pretrained))
    wanted = lengths("longppl", max_seq_lengths)
    check_context(task, wanted, {**model_args, "pretrained": pretrained}, tok)
    selection = corpora.select(corpus, corpora.local_path(corpus, data_dir or None), tok, int(l_max or max(wanted)),
                               int(num_samples) if num_samples else None)
    docs = []
    for length in wanted:
        docs += corpora.lm_eval_docs(selection, tok, length)
    return {"test": datasets.Dataset.from_list(docs)}


def process_results(doc: dict, results) -> dict:
    """(log-likelihood, tokens) pooled over every length, and under each length's own metric."""
    loglikelihood = results[0][0] if isinstance(results[0], (list, tuple)) else results[0]
    pair = (float(loglikelihood), doc["n_tokens"])
    return {"perplexity": pair, **per_length("longppl", doc, pair)}


def token_perplexity(items) -> float:
    """exp(sum of NLL / scored tokens), pooled over sequences (token-weighted)."""
    return math.exp(-sum(ll for ll, _ in items) / sum(n for _, n in items))


def perplexity_at_length(items) -> float:
    """token_perplexity of one length's sequences (lm-eval's aggregation of its metric)."""
    return at_length(token_perplexity)(items)
