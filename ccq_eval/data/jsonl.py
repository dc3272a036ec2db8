"""Reading the record files users supply (corpora, LongBench records, RULER QA and recall files, haystacks): one-line
errors that name the file and the line, never a traceback or a silently skipped bad line.

- JSON Lines (``.jsonl``): one JSON value a line. Lines end at ``\\n`` only (``\\r\\n`` tolerated): U+2028, U+2029,
  U+0085 and the other characters ``str.splitlines`` also breaks at are text, and ``json.dumps(...,
  ensure_ascii=False)`` writes them raw inside strings, as web and Wikipedia text holds them.
- JSON (``.json``): an array of records (what ``pandas.DataFrame.to_json(orient="records")`` and a hand-made list
  write), each numbered by the line it starts on; or one object (a dataset's own official file, such as SQuAD's
  ``{"data": [...]}``), returned as the only record for the suite's reader to unfold.
- Either compressed with gzip where the name ends in ``.gz``. A byte-order mark is not part of line 1."""

from __future__ import annotations

import gzip
import json
import re
import zlib
from pathlib import Path

SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")  # what a suite's file may be called, in this order


def read_jsonl(path: Path, error: type[Exception], what: str) -> tuple[list[tuple[int, object]], int]:
    """([(line number, parsed value)], blank lines skipped)."""
    text = _text(path, error, what)
    if _stem_suffix(path) == ".json":
        return _json_document(text, path, error, what), 0
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()  # the file's last newline ends a line; it starts none
    records, blank = [], 0
    for number, line in enumerate(lines, 1):
        line = line.removesuffix("\r")
        if not line.strip():
            blank += 1
            continue
        records.append((number, _parsed(line, number, path, error, what)))
    return records, blank


def _stem_suffix(path: Path) -> str:
    return Path(path.name.removesuffix(".gz")).suffix


def _text(path: Path, error: type[Exception], what: str) -> str:
    if path.is_dir():
        raise error(f"{what} {str(path)!r}: is a folder; expected a JSONL file (one JSON object per line)")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise error(f"{what} {str(path)!r}: cannot be read ({exc.strerror or exc.__class__.__name__}); "
                    "check the path and its permissions") from exc
    if path.name.endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise error(f"{what} {str(path)!r}: its name ends in .gz but it is not a whole gzip file; "
                        "compress it again, or drop the .gz") from exc
    try:
        return raw.decode("utf-8-sig")  # a byte-order mark (Windows editors write one) is not part of line 1
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise error(f"{what} {str(path)!r}: line {line} is not UTF-8; re-encode the file as UTF-8") from exc


def _parsed(line: str, number: int, path: Path, error: type[Exception], what: str):
    try:
        value = json.loads(line, strict=False)  # strict=False: a raw tab or control character inside a string is text
    except json.JSONDecodeError as exc:
        raise error(f"{what} {str(path)!r}: line {number} is not JSON; expected one JSON object per line") from exc
    except (ValueError, RecursionError) as exc:  # a number of thousands of digits, nesting thousands deep
        raise error(f"{what} {str(path)!r}: line {number} cannot be read ({_why(exc)}); fix or drop that line") from exc
    _check_text(value, number, path, error, what)
    return value


def _why(exc: Exception) -> str:
    return "nested too deeply" if isinstance(exc, RecursionError) else "a number too long to convert"


def _check_text(value, number: int, path: Path, error: type[Exception], what: str) -> None:
    if _has_lone_surrogate(value):
        raise error(f"{what} {str(path)!r}: line {number} holds a lone UTF-16 surrogate escape (e.g. \\ud800), "
                    "which is not text; fix or drop that line")


_WHITESPACE = re.compile(r"[ \t\n\r]*")  # JSON's whitespace


def _json_document(text: str, path: Path, error: type[Exception], what: str) -> list[tuple[int, object]]:
    """A .json file: its array's records, each numbered by the line it starts on; or its one object. One pass: the
    decoder reads in place and line numbers are counted on from the previous record (an official file of 50 MB reads
    in about the time its JSON Lines copy does)."""
    decoder = json.JSONDecoder(strict=False)
    start = _WHITESPACE.match(text).end()
    try:
        if not text.startswith("[", start):
            value, end = decoder.raw_decode(text, start)
            if text[end:].strip():
                raise json.JSONDecodeError("extra data", text, end)
            _check_text(value, 1, path, error, what)
            return [(1, value)]
        records, at, line, counted = [], start + 1, 1, 0
        while True:
            at = _WHITESPACE.match(text, at).end()
            if text.startswith("]", at):
                break
            if records:
                if not text.startswith(",", at):
                    raise json.JSONDecodeError("expected ',' or ']'", text, at)
                at = _WHITESPACE.match(text, at + 1).end()
            line, counted = line + text.count("\n", counted, at), at
            value, at = decoder.raw_decode(text, at)
            _check_text(value, line, path, error, what)
            records.append((line, value))
        if text[at + 1:].strip():
            raise json.JSONDecodeError("extra data", text, at + 1)
        return records
    except json.JSONDecodeError as exc:
        raise error(f"{what} {str(path)!r}: line {exc.lineno} is not JSON ({exc.msg}); expected a JSON array of "
                    "records, or a dataset's own JSON file") from exc
    except (ValueError, RecursionError) as exc:
        raise error(f"{what} {str(path)!r}: cannot be read ({_why(exc)}); fix or drop that record") from exc


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
