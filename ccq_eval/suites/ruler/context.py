"""What the report shows of a RULER prompt beside each sample: VT's line where the chain's value is assigned (the
worked example's chain left aside), QA's first answer where a document holds it, or else the question, with the
text around it."""

from __future__ import annotations

import re

from ccq_eval.suites.prompt_context import answer_span, span_context


def task_context(record: dict, width: int) -> dict | None:
    """{"label", "before", "needle", "after"} of a frozen record, or None when the prompt holds none of them."""
    prompt, outputs = record.get("input"), record.get("outputs")
    if not isinstance(prompt, str) or not isinstance(outputs, list) or not outputs:
        return None
    question = re.search(r"Question: [^\n]*$", prompt)
    if isinstance(outputs[0], str) and prompt.count("VAR "):
        found = re.search(rf"VAR {re.escape(outputs[0])} = \d+", prompt)
        if found is not None:
            return span_context(prompt, found.span(), width, "assignment in context")
    if "Document 1:" in prompt:  # QA's documents: where the answer is, if one holds it
        found = answer_span(prompt[:question.start()] if question else prompt, outputs)
        if found is not None:
            return span_context(prompt, found, width, "answer in context")
    return span_context(prompt, question.span(), width, "question in context") if question else None
