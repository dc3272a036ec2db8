"""The multi-needle suite's driver: S-NIAH's (haystack and length checks, frozen data, one lm-eval evaluation per
unit, early stop once every expected value is out) over this suite's generator, with several answers a sample."""

from __future__ import annotations

from ccq_eval.suites.multi_niah import data as multi
from ccq_eval.suites.sniah.driver import SeveralAnswersDriver


class MultiNiahDriver(SeveralAnswersDriver):
    generator = multi

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        # the first answer's needle as the sample's depth (the asked one in multikey tasks); every answer's beside it
        return {"depth": doc["depths"][0], "depth_used": doc["depths_used"][0], "depths": doc["depths"],
                "depths_used": doc["depths_used"], "keys": self.ANSWER_SEPARATOR.join(doc["keys"])}
