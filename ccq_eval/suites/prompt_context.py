"""What the report shows of a frozen prompt beside a sample: one span of it (a needle, an answer, an assignment, the
question) with some text either side and a label that says what the span is. The suites find the span
(SampleView.context); this builds what the viewer reads."""

from __future__ import annotations


def span_context(prompt: str, span: tuple[int, int], width: int, label: str) -> dict:
    """The viewer's context of ``prompt[start:end]``: {"label", "before", "needle", "after"}, ``width`` a side."""
    start, end = span
    return {"label": label, "before": prompt[max(0, start - width):start], "needle": prompt[start:end],
            "after": prompt[end:end + width]}


def answer_span(text: str, answers: list) -> tuple[int, int] | None:
    """Where the earliest-listed answer first occurs in ``text``, case-insensitively (as contains-match reads it)."""
    lowered = text.lower()
    for answer in answers:
        if isinstance(answer, str) and answer.strip() and (at := lowered.find(answer.strip().lower())) >= 0:
            return at, at + len(answer.strip())
    return None
