"""Reading the JSONL files users supply (corpora, LongBench records, haystacks): one-line errors
that name the file and the line, never a traceback or a silently skipped bad line."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: Path, error: type[Exception], what: str) -> tuple[list[tuple[int, object]], int]:
    """([(line number, parsed value)], blank lines skipped)."""
    raw = path.read_bytes()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{what} {str(path)!r}: line {line} is not UTF-8; re-encode the file as UTF-8") from exc
    records, blank = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            blank += 1
            continue
        try:
            records.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            raise error(f"{what} {str(path)!r}: line {number} is not JSON; expected one JSON object per line") from exc
    return records, blank
