"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.recall."""

from ccq_eval.suites.recall.plugin import dataset  # noqa: F401
from ccq_eval.suites.recall.scoring import process_results, score_at_length  # noqa: F401
