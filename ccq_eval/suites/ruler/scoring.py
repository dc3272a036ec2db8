"""What tasks/ruler's process_results calls: RULER's string_match_all (the share of expected answers found, as
scripts/eval/synthetic/constants.py scores VT, CWE and FWE) and string_match_part (any reference found: QA), over
every length and under each length's own metric."""

from __future__ import annotations

from ccq_eval.suites.ruler.qa import string_match_part
from ccq_eval.suites.sniah.scoring import ruler_postprocess, scored, score_at_length  # noqa: F401 (aggregation)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return scored("ruler", doc, results)


def process_results_part(doc: dict, results: list[str]) -> dict[str, float]:
    return scored("ruler", doc, results, lambda prediction, refs: string_match_part(ruler_postprocess(prediction), refs))
