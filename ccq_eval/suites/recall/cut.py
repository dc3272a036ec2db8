"""The protocol's cut of a document to a fixed token budget (truncate_context in HazyResearch/prefix-linear-
attention's lm_eval/api/task.py): ``context_length - 50`` tokens of the document, centred on where its answer
starts (NQ, SWDE, FDA, SQuAD) or from its start (TriviaQA, DROP), in the model's own tokenizer (special tokens counted as it adds
them, then dropped on decoding)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ccq_eval.suites.recall.tasks import ANSWER_RESERVE, RecallTask


@dataclass(frozen=True)
class Cut:
    context: str  # the kept tokens, decoded
    kept: int  # tokens kept of the document
    total: int  # tokens of the whole document
    answer_found: bool | None  # where the window centres on an answer: whether the document holds it


def _earliest(patterns: list[str], context: str) -> int:
    starts = [m.start() for p in patterns if (m := re.search(re.escape(p), context, re.IGNORECASE))]
    return min(starts) if starts else -1


def answer_start(task: RecallTask, record: dict, context: str) -> tuple[int, bool | None]:
    """(character where the window centres, found?) as the reference finds it: the earliest case-insensitive match
    of any answer field's first value (NQ: the first answer; SWDE, FDA: the key or the value; SQuAD: the value); none
    found, the earliest of the first alternative answer that matches; neither, -1 (which the reference then slices
    as context[:-1], centring on the document's end). No answer field: the document's start."""
    if not task.centred_on_answer:
        return 0, None
    firsts = [v[0] if isinstance(v, list) else v for v in (record[f] for f in task.answer_fields)]
    if (start := _earliest(firsts, context)) >= 0:
        return start, True
    for alternative in record.get("alt_answers") or []:
        if (start := _earliest([alternative], context)) >= 0:
            return start, True
    return -1, False


def cut(task: RecallTask, record: dict, tokenizer, context_length: int) -> Cut:
    desired = context_length - ANSWER_RESERVE
    context = record[task.document].strip()
    tokens = tokenizer(context)["input_ids"]
    start_char, found = answer_start(task, record, context)
    answer_token = len(tokenizer(context[:start_char])["input_ids"])
    if start_char == -1 and "tok_pos" in record and answer_token > desired:
        answer_token = record["tok_pos"]
    start = max(0, answer_token - desired // 2)
    end = min(len(tokens), answer_token + desired - (answer_token - start))
    kept = tokens[start:end]
    return Cut(tokenizer.decode(kept, skip_special_tokens=True), len(kept), len(tokens), found)
