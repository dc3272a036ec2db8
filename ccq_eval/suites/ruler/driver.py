"""The RULER suite's driver: S-NIAH's (frozen data, one lm-eval evaluation per unit, answers' NLL from the decoding
prefill, early stop once every expected answer is out, RULER's string_match_all) over this suite's generator, with
each task's own generation budget."""

from __future__ import annotations

import functools

from ccq_eval.suites.ruler import TOKENS_TO_GENERATE
from ccq_eval.suites.ruler import data as ruler
from ccq_eval.suites.sniah.driver import SeveralAnswersDriver


class RulerDriver(SeveralAnswersDriver):
    generator = ruler

    @functools.cached_property
    def haystack(self):
        return None  # these tasks read no essays

    def tokens_to_generate(self, task: str) -> int:
        return TOKENS_TO_GENERATE[task]

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        return {}  # the answers are the sample's target; the prompt's context comes from its frozen record
