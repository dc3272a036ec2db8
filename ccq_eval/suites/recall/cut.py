"""The protocol's cut of a document to a fixed token budget (truncate_context in HazyResearch/prefix-linear-
attention's lm_eval/api/task.py): ``context_length - 50`` tokens of the document, centred on where its first answer
starts (NQ) or from its start (TriviaQA, DROP), in the model's own tokenizer (special tokens counted as it adds
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


def answer_start(task: RecallTask, record: dict, context: str) -> tuple[int, bool | None]:
    """(character where the window centres, found?) as the reference finds it: the first answer's earliest
    case-insensitive match; not found, then the first alternative answer that matches; neither, -1 (which the
    reference then slices as context[:-1], centring on the document's end)."""
    if not task.centred_on_answer:
        return 0, None
    match = re.search(re.escape(record["answers"][0]), context, re.IGNORECASE)
    if match:
        return match.start(), True
    for alternative in record.get("alt_answers") or []:
        match = re.search(re.escape(alternative), context, re.IGNORECASE)
        if match:
            return match.start(), True
    return -1, False


def cut(task: RecallTask, record: dict, tokenizer, context_length: int) -> Cut:
    desired = context_length - ANSWER_RESERVE
    context = record["context"].strip()
    tokens = tokenizer(context)["input_ids"]
    start_char, found = answer_start(task, record, context)
    answer_token = len(tokenizer(context[:start_char])["input_ids"])
    if start_char == -1 and "tok_pos" in record and answer_token > desired:
        answer_token = record["tok_pos"]
    start = max(0, answer_token - desired // 2)
    end = min(len(tokens), answer_token + desired - (answer_token - start))
    kept = tokens[start:end]
    return Cut(tokenizer.decode(kept, skip_special_tokens=True), len(kept), len(tokens), found)
