"""The multi-needle suite's driver: S-NIAH's (haystack and length checks, frozen data, one lm-eval evaluation per
unit, early stop once every expected value is out) over this suite's generator, with several answers a sample."""

from __future__ import annotations

from ccq_eval.suites.multi_niah import data as multi
from ccq_eval.suites.outcomes import Metric, Sample, mean_metric
from ccq_eval.suites.sniah.driver import SniahDriver

ANSWER_SEPARATOR = ", "  # the answers as one continuation for their NLL (and the expected text a sample shows)


class MultiNiahDriver(SniahDriver):
    generator = multi

    def answer(self, doc: dict) -> str:
        return ANSWER_SEPARATOR.join(doc["outputs"])

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        # the first answer's needle as the sample's depth (the asked one in multikey tasks); every answer's beside it
        return {"depth": doc["depths"][0], "depth_used": doc["depths_used"][0], "depths": doc["depths"],
                "depths_used": doc["depths_used"], "keys": ANSWER_SEPARATOR.join(doc["keys"])}

    def unit_metrics(self, samples: list[Sample]) -> list[Metric]:
        """RULER's score (string_match_all: the mean share of expected values found) and how many samples
        found every one of them."""
        scores = [s.score for s in samples]
        return [mean_metric("score", scores, is_primary=True),
                Metric("all_found", float(sum(1 for s in scores if s == 100.0)), n=len(scores))]
