"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.sniah."""

from ccq_eval.suites.sniah.plugin import dataset  # noqa: F401
from ccq_eval.suites.sniah.scoring import process_results, score_at_length  # noqa: F401
