"""The RULER suite's driver: S-NIAH's (frozen data, one lm-eval evaluation per unit, answers' NLL from the decoding
prefill, early stop once every expected answer is out, RULER's string_match_all) over this suite's generator, with
each task's own generation budget."""

from __future__ import annotations

import functools

from ccq_eval.suites.outcomes import Metric, Sample, mean_metric
from ccq_eval.suites.ruler import TOKENS_TO_GENERATE
from ccq_eval.suites.ruler import data as ruler
from ccq_eval.suites.sniah.driver import SniahDriver

ANSWER_SEPARATOR = ", "  # the answers as one continuation for their NLL (and the expected text a sample shows)


class RulerDriver(SniahDriver):
    generator = ruler

    @functools.cached_property
    def haystack(self):
        return None  # these tasks read no essays

    def tokens_to_generate(self, task: str) -> int:
        return TOKENS_TO_GENERATE[task]

    def answer(self, doc: dict) -> str:
        return ANSWER_SEPARATOR.join(doc["outputs"])

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        return {}  # the answers are the sample's target; the prompt's context comes from its frozen record

    def unit_metrics(self, samples: list[Sample]) -> list[Metric]:
        """RULER's score (string_match_all: the mean share of expected answers found) and how many samples found
        every one of them."""
        scores = [s.score for s in samples]
        return [mean_metric("score", scores, is_primary=True),
                Metric("all_found", float(sum(1 for s in scores if s == 100.0)), n=len(scores))]
