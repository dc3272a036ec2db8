"""S-NIAH's column names: the paper's abbreviation, the haystack for S-NIAH-2/3, the length."""

from __future__ import annotations

import json

from ccq_eval.suites.base import format_length


def haystack_of(settings: str) -> str | None:
    haystack = json.loads(settings).get("haystack")
    return haystack["name"] if haystack else None


def column_name(suite, task: str, haystack, length: int) -> str:
    """S-NIAH-2/3 columns carry their haystack's name: numbers on another haystack are not the paper's."""
    return f"{suite.display_name(task)}{f' ({haystack})' if isinstance(haystack, str) else ''} {format_length(length)}"
