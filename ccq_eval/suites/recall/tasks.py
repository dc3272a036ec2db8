"""The six recall-intensive tasks of the Based / JRT protocol (HazyResearch/prefix-linear-attention at 7490f22,
lm-eval-harness/lm_eval/tasks/based_{swde,squadv2,fda,triviaqa,nq,drop}/task.py, the context cut of its
api/task.py and the cut's keys from its lm_eval/__main__.py and launch_jrt.py): the one table of them. lm-eval's own
swde, fda and squad_completion (the lm suite's) read the datasets' text whole; here every task's document is cut to
the length first, as the reference's --cutting_context does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable

REFERENCE_COMMIT = "7490f22bda3e38dc057bcbaffe6bdb09b4d475e6"  # HazyResearch/prefix-linear-attention
MAX_GEN = 48  # construct_requests: {"until": ["\n"], "max_gen_toks": 48}
UNTIL = "\n"
ANSWER_RESERVE = 50  # --answer_length: the cut keeps context_length - 50 tokens of the document
TASK_VERSION = 2
_MARKERS = re.compile(r"\[PAR\]|\[DOC\]|\[TLE\]")
SWDE_SUMMARY = "Summary of information above..."


def _without_end(text: str, ending: str) -> str:
    """``text`` with ``ending`` removed from its end, case-insensitively, for as long as it ends with it."""
    while ending and text.lower().endswith(ending.lower()):
        text = text[:-len(ending)]
    return text


def triviaqa_prompt(doc: dict) -> str:
    context, question = _MARKERS.sub("", doc["context"].strip()), doc["question"].strip()
    return _without_end(context, question).strip().strip(".") + ". " + question


def nq_prompt(doc: dict) -> str:
    context, question = doc["context"].strip(), doc["question"].strip()
    if context.endswith(question):  # once, and exactly
        context = context[:-len(question)]
    return context.strip().strip(".") + ". " + question


def drop_prompt(doc: dict) -> str:
    context, question = doc["context"].strip(), doc["question"].strip()
    return _without_end(context, question).strip().strip(".") + ". " + question


def _key_question(doc: dict) -> str:
    return doc["key"][0].upper() + doc["key"][1:] + ":"


def swde_prompt(doc: dict) -> str:
    text = _without_end(doc["text"].split(SWDE_SUMMARY)[0], doc["key"] + ":")
    return text.strip("\n").strip().strip("\n").strip().strip(".") + ". " + _key_question(doc)


def fda_prompt(doc: dict) -> str:
    text = _without_end(doc["text"], doc["key"] + ":").strip("\n").strip(".")
    return text + ("" if text.endswith(".") else ".") + " " + _key_question(doc)


def squad_prompt(doc: dict) -> str:
    return doc["text"].strip()


def swde_document(record: dict) -> dict:
    """validation_docs: the page before its summary (the part after it is kept aside, never prompted)."""
    return {**record, "text": record["text"].split(SWDE_SUMMARY)[0]}


@dataclass(frozen=True)
class RecallTask:
    key: str
    dataset: str  # the hub dataset the reference reads (its validation split)
    column: str  # the recall table's column (Gated DeltaNet's Table 4)
    document: str  # the field the cut keeps: "context", or "text" for the three extraction tasks
    answer_fields: tuple[str, ...]  # the window centres on their earliest match (none: the document's start)
    target: str  # "answers" (a list) or "value" (one string): what contains-match looks for
    prompt: Callable[[dict], str]  # doc_to_text, on the record with its cut document
    question: str | None = "question"  # the field asked (None: the prompt carries it; SWDE and FDA ask "Key:")
    prepare: Callable[[dict], dict] | None = None  # validation_docs' change to a record, before the cut

    @property
    def centred_on_answer(self) -> bool:
        return bool(self.answer_fields)

    def answers(self, record: dict) -> list[str]:
        value = record[self.target]
        return list(value) if isinstance(value, list) else [value]

    @property
    def fields(self) -> tuple[str, ...]:
        """The string fields its records need besides the target: the document and what is asked (SWDE, FDA: key)."""
        asked = self.question or ("key" if "key" in self.answer_fields else None)
        return (self.document, asked) if asked else (self.document,)

    def asked(self, record: dict) -> str | None:
        """What the prompt ends by asking: the question, SWDE's and FDA's "Key:", or None (SQuAD's text holds it)."""
        if self.question:
            return record[self.question].strip()
        return _key_question(record) if "key" in self.answer_fields else None

    def left_out(self, record: dict) -> bool:
        """The reference's cut returns no request when an answer field's first value has one character or none."""
        for field in self.answer_fields:
            value = record[field]
            if len(value[0] if isinstance(value, list) else value) <= 1:
                return True
        return False


TASKS = {
    "recall_swde": RecallTask("swde", "hazyresearch/based-swde-v2", "SWDE", "text", ("key", "value"), "value",
                              swde_prompt, question=None, prepare=swde_document),
    "recall_squad": RecallTask("squad", "hazyresearch/based-squad", "SQD", "text", ("value",), "value", squad_prompt,
                               question=None),
    "recall_fda": RecallTask("fda", "hazyresearch/based-fda", "FDA", "text", ("key", "value"), "value", fda_prompt,
                             question=None),
    "recall_triviaqa": RecallTask("triviaqa", "hazyresearch/based_triviaqa", "TQA", "context", (), "answers",
                                  triviaqa_prompt),
    "recall_nq": RecallTask("nq", "hazyresearch/based_nq_2048", "NQ", "context", ("answers",), "answers", nq_prompt),
    "recall_drop": RecallTask("drop", "hazyresearch/based_drop", "Drop", "context", (), "answers", drop_prompt),
}
