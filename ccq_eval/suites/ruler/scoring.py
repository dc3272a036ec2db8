"""What tasks/ruler's process_results calls: RULER's string_match_all (the share of expected answers found, as
scripts/eval/synthetic/constants.py scores VT, CWE and FWE), over every length and under each length's own metric."""

from __future__ import annotations

from ccq_eval.suites.sniah.scoring import scored, score_at_length  # noqa: F401 (the plugins' aggregation)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return scored("ruler", doc, results)
