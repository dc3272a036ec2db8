"""The in-context recall tasks of the Based / JRT protocol (HazyResearch/prefix-linear-attention at 7490f22,
lm-eval-harness/lm_eval/tasks/based_{triviaqa,nq,drop}/task.py and the context cut of its api/task.py): the one
table of them. SWDE, SQuAD and FDA, the protocol's other three, are lm-eval's own tasks (the lm suite's swde,
squad_completion and fda); the recall table shows all six."""

from __future__ import annotations

import re
from dataclasses import dataclass

REFERENCE_COMMIT = "7490f22bda3e38dc057bcbaffe6bdb09b4d475e6"  # HazyResearch/prefix-linear-attention
MAX_GEN = 48  # construct_requests: {"until": ["\n"], "max_gen_toks": 48}
ANSWER_RESERVE = 50  # --answer_length: the cut keeps context_length - 50 tokens of the document
TASK_VERSION = 1
_MARKERS = re.compile(r"\[PAR\]|\[DOC\]|\[TLE\]")


@dataclass(frozen=True)
class RecallTask:
    key: str
    dataset: str  # the hub dataset the reference reads (its validation split)
    centred_on_answer: bool  # the cut centres on the first answer (NQ); else it keeps the document's start
    drop_short_answers: bool  # NQ: a record whose first answer has one character or none is left out (the cut's rule)
    clean_markers: bool  # TriviaQA: "[PAR]", "[DOC]", "[TLE]" removed from the context
    strip_question_loop: bool  # the trailing question removed case-insensitively while it repeats (NQ: once, exactly)

    def prompt(self, context: str, question: str) -> str:
        """doc_to_text on the cut context: the question stripped from its end, a period, a space, the question."""
        context = _MARKERS.sub("", context.strip()) if self.clean_markers else context.strip()
        question = question.strip()
        if self.strip_question_loop:
            while question and context.lower().endswith(question.lower()):
                context = context[:-len(question)]
        elif context.endswith(question):
            context = context[:-len(question)]
        return context.strip().strip(".") + ". " + question


TASKS = {
    "recall_triviaqa": RecallTask("triviaqa", "hazyresearch/based_triviaqa", False, False, True, True),
    "recall_nq": RecallTask("nq", "hazyresearch/based_nq_2048", True, True, False, False),
    "recall_drop": RecallTask("drop", "hazyresearch/based_drop", False, False, False, True),
}
