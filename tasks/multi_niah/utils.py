"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.multi_niah."""

from ccq_eval.suites.multi_niah.plugin import dataset  # noqa: F401
from ccq_eval.suites.multi_niah.scoring import process_results, score_at_length  # noqa: F401
