"""What the report shows of a RULER prompt beside each sample: VT's line where the chain's value is assigned (the
worked example's chain left aside), or CWE's and FWE's question, with the text before it."""

from __future__ import annotations

import re


def task_context(record: dict, width: int) -> dict | None:
    """{"before", "needle", "after"} of a frozen record, or None when the prompt holds neither."""
    prompt, outputs = record.get("input"), record.get("outputs")
    if not isinstance(prompt, str) or not isinstance(outputs, list) or not outputs:
        return None
    found = None
    if isinstance(outputs[0], str) and prompt.count("VAR "):
        found = re.search(rf"VAR {re.escape(outputs[0])} = \d+", prompt)
    if found is None:
        found = re.search(r"Question: [^\n]*$", prompt)
    if found is None:
        return None
    start, end = found.span()
    return {"before": prompt[max(0, start - width):start], "needle": prompt[start:end], "after": prompt[end:end + width]}
