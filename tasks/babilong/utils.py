"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.babilong."""

from ccq_eval.suites.babilong.plugin import dataset  # noqa: F401
from ccq_eval.suites.babilong.scoring import process_results, score_at_length  # noqa: F401
