"""Thin shim: lm-eval calls these; the work is in ccq_eval.suites.ruler."""

from ccq_eval.suites.ruler.plugin import dataset  # noqa: F401
from ccq_eval.suites.ruler.scoring import process_results, process_results_part, score_at_length  # noqa: F401
