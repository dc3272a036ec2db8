"""The RULER suite's driver: S-NIAH's (frozen data, one lm-eval evaluation per unit, answers' NLL from the decoding
prefill, early stop once the output scores 1) over this suite's generator, with each task's own generation budget
and RULER's metric for it: string_match_all, and string_match_part for QA."""

from __future__ import annotations

import functools

from ccq_eval.suites.ruler import QA_TASKS, TOKENS_TO_GENERATE, qa, qa_data
from ccq_eval.suites.ruler import data as ruler
from ccq_eval.suites.sniah.driver import SeveralAnswersDriver
from ccq_eval.suites.sniah.scoring import ruler_postprocess


class RulerDriver(SeveralAnswersDriver):
    generator = ruler

    @functools.cached_property
    def haystack(self):
        """The chosen QA tasks' documents (task -> source), read and checked before the model loads."""
        return qa_data.sources(self.inputs.tasks, self.inputs.data_dir)

    def check_with_tokenizer(self, tokenizer) -> None:
        super().check_with_tokenizer(tokenizer)
        for task in self.inputs.tasks:
            for length in self.inputs.lengths:
                ruler.check_source_fills(task, tokenizer, self.haystack, length, self.inputs.seed)

    def tokens_to_generate(self, task: str) -> int:
        return TOKENS_TO_GENERATE[task]

    def match(self, task: str, prediction: str, references: list[str]) -> float:
        if task in QA_TASKS:
            return qa.string_match_part(ruler_postprocess(prediction), references)
        return super().match(task, prediction, references)

    def answer(self, doc: dict) -> str:
        """QA's references are alternatives: the first one's NLL; the other tasks' answers are all expected."""
        return doc["outputs"][0] if doc.get("alternatives") else super().answer(doc)

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        settings, data_key = super().unit_settings(task, length, model)
        source = self.haystack.get(task)
        if source is not None:
            settings["documents"] = {"name": source.name, "sha256": source.fingerprint}
        return settings, data_key

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        return {}  # the answers are the sample's target; the prompt's context comes from its frozen record
