"""What tasks/multi_niah's process_results calls: RULER's string_match_all (the share of expected values found,
S-NIAH's scoring.ruler_string_match), over every length and under each length's own metric."""

from __future__ import annotations

from ccq_eval.suites.sniah.scoring import scored, score_at_length  # noqa: F401 (the plugins' aggregation)


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    return scored("multi_niah", doc, results)
