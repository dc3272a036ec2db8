"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.longppl."""

from ccq_eval.suites.longppl.plugin import dataset, perplexity_at_length, process_results, token_perplexity  # noqa: F401
