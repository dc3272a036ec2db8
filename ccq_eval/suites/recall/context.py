"""What the report shows of a recall prompt beside each sample: the first answer where the cut document still
holds it (the protocol scores a model on finding it there), else the question that ends the prompt."""

from __future__ import annotations

from ccq_eval.suites.prompt_context import answer_span, span_context


def recall_context(record: dict, width: int) -> dict | None:
    """The context of a frozen recall prompt record ({"prompt", "question", "answers", ...}), or None."""
    prompt, answers = record.get("prompt"), record.get("answers")
    if not isinstance(prompt, str) or not isinstance(answers, list):
        return None
    question = record.get("question")
    question_at = len(prompt) - len(question) if isinstance(question, str) and prompt.endswith(question) else len(prompt)
    found = answer_span(prompt[:question_at], answers)
    if found is not None:
        return span_context(prompt, found, width, "answer in context")
    if question_at == len(prompt):
        return None  # nothing found to mark, and no question known apart from the prompt
    return span_context(prompt, (question_at, len(prompt)), width, "question in context")
