"""Essay haystacks for S-NIAH-2/3: the shipped default, or text the user supplies (Paul Graham's
essays, as the paper uses). RULER takes the essays as one stream of words; so does this."""

from __future__ import annotations

import hashlib
import sys
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ccq_eval.data import SHIPPED_ESSAYS
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.errors import BadInput

DEFAULT_HAYSTACK = SHIPPED_ESSAYS
DEFAULT_NAME = "ccq-essays"
MIN_WORDS = 1000  # below this an "essay haystack" is mostly the needle and the question
MAX_BYTES = 256 << 20  # far beyond any haystack a length needs (the essays are cycled); refuses /dev/zero


class HaystackError(BadInput):
    """A haystack that cannot be used as given; the message says what to do."""


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: load_haystack hands out one per source
class Haystack:
    """The text with its words separated by single spaces, and where each word ends. A tuple of word
    strings would take ~20x the text for short words; this takes the text plus 4 bytes a word."""

    name: str
    fingerprint: str  # sha256 of the normalised text
    text: str
    word_ends: np.ndarray  # int32 (int64 for texts over 2 GB): offset just past each word

    @property
    def n_words(self) -> int:
        return len(self.word_ends)

    def take(self, n_words: int) -> tuple[str, int]:
        """The first n words, cycling through the text again when it is shorter; (text, passes)."""
        passes = -(-n_words // self.n_words)
        whole, rest = divmod(n_words, self.n_words)
        parts = [self.text] * whole + ([self.text[: int(self.word_ends[rest - 1])]] if rest else [])
        return " ".join(parts), passes


@lru_cache(maxsize=1)
def _whitespace_to_space() -> dict[int, str]:
    """Every character str.split() (and the regex \\s) treats as whitespace, mapped to a space."""
    return {code: " " for code in range(sys.maxunicode + 1) if chr(code).isspace()}


def _single_spaced(text: str) -> str:
    """Words separated by single spaces, as ``" ".join(text.split())``, without a list of every word (a few
    copies of the text at most, however short its words are)."""
    text = text.translate(_whitespace_to_space())
    while "  " in text:
        text = text.replace("  ", " ")
    return text.strip(" ")


def _word_ends(text: str, block: int = 1 << 20) -> np.ndarray:
    """Offsets just past each word of a single-spaced text, found a block at a time (bounded scratch memory)."""
    dtype = np.int32 if len(text) < 2**31 else np.int64
    spaces = [np.flatnonzero(np.frombuffer(text[start:start + block].encode("utf-32-le"), dtype=np.uint32) == 32)
              .astype(dtype) + start for start in range(0, len(text), block)]
    ends = np.concatenate([*spaces, np.array([len(text)] if text else [], dtype=dtype)])
    return ends.astype(dtype, copy=False)


def _read_text(file: Path) -> str:
    if not file.is_file():
        raise HaystackError(f"haystack {str(file)!r}: not a regular file; pass a .txt / .jsonl file or a folder of them")
    if file.stat().st_size > MAX_BYTES:
        raise HaystackError(f"haystack {str(file)!r}: {file.stat().st_size >> 20} MB, over the {MAX_BYTES >> 20} MB "
                            "a haystack may have; pass a smaller file (it is cycled when a length needs more)")
    if file.suffix == ".jsonl":
        texts = []
        for number, record in read_jsonl(file, HaystackError, "haystack")[0]:
            if not isinstance(record, dict) or not isinstance(record.get("text"), str):
                raise HaystackError(f"haystack {str(file)!r}: line {number} has no string field 'text'")
            texts.append(record["text"])
        return " ".join(texts)
    try:
        raw = file.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise HaystackError(f"haystack {str(file)!r}: not UTF-8 text; pass a .txt file or .jsonl with a 'text' field") from exc
    if "\x00" in raw:
        raise HaystackError(f"haystack {str(file)!r}: binary data, not text; pass a .txt file or .jsonl with a 'text' field")
    return raw


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".txt", ".jsonl"))
        if not files:
            raise HaystackError(f"haystack {str(path)!r}: folder has no .txt or .jsonl files")
        return files
    if not path.exists():
        raise HaystackError(f"haystack {str(path)!r}: no such file; pass a .txt / .jsonl file or a folder of them")
    return [path]


@lru_cache(maxsize=8)
def load_haystack(path: str | None = None) -> Haystack:
    """The shipped essays when path is None, else a .txt / .jsonl file or a folder of them."""
    source = Path(path).expanduser() if path else DEFAULT_HAYSTACK
    text = _single_spaced(" ".join(_read_text(f) for f in _files(source)))
    word_ends = _word_ends(text)
    if len(word_ends) < MIN_WORDS:
        raise HaystackError(f"haystack {str(source)!r}: {len(word_ends)} words, too short for a haystack (need at "
                            f"least {MIN_WORDS})")
    name = DEFAULT_NAME if path is None else source.stem
    return Haystack(name=name, fingerprint=hashlib.sha256(text.encode()).hexdigest(), text=text, word_ends=word_ends)


def resolve_haystack_path(haystack: str | None, data_dir: str | None) -> str | None:
    """--haystack wins; else DATA_DIR/haystack when it exists; else None (the shipped default)."""
    if haystack:
        return haystack
    if data_dir and (Path(data_dir) / "haystack").is_dir():
        return str(Path(data_dir) / "haystack")
    return None
