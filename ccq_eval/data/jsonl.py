"""Reading the JSONL files users supply (corpora, LongBench records, haystacks): one-line errors
that name the file and the line, never a traceback or a silently skipped bad line."""

from __future__ import annotations

import json
from pathlib import Path


def read_jsonl(path: Path, error: type[Exception], what: str) -> tuple[list[tuple[int, object]], int]:
    """([(line number, parsed value)], blank lines skipped)."""
    if path.is_dir():
        raise error(f"{what} {str(path)!r}: is a folder; expected a JSONL file (one JSON object per line)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{what} {str(path)!r}: cannot be read ({exc.strerror or exc.__class__.__name__}); "
                    "check the path and its permissions") from exc
    try:
        text = raw.decode("utf-8-sig")  # a byte-order mark (Windows editors write one) is not part of line 1
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{what} {str(path)!r}: line {line} is not UTF-8; re-encode the file as UTF-8") from exc
    records, blank = [], 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            blank += 1
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as exc:
            raise error(f"{what} {str(path)!r}: line {number} is not JSON; expected one JSON object per line") from exc
        except (ValueError, RecursionError) as exc:  # a number of thousands of digits, nesting thousands deep
            why = "nested too deeply" if isinstance(exc, RecursionError) else "a number too long to convert"
            raise error(f"{what} {str(path)!r}: line {number} cannot be read ({why}); fix or drop that line") from exc
        if _has_lone_surrogate(value):
            raise error(f"{what} {str(path)!r}: line {number} holds a lone UTF-16 surrogate escape (e.g. \\ud800), "
                        "which is not text; fix or drop that line")
        records.append((number, value))
    return records, blank


def _has_lone_surrogate(value) -> bool:
    """A \\udXXX escape without its pair decodes to a str that no tokenizer or encoder accepts."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError:
                return True
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return False
