"""Frozen, hashed datasets in the cache ($CCQ_EVAL_CACHE, default ~/.cache/ccq-eval).

A dataset is a JSONL file plus a sidecar ``.meta.json`` holding the key it was built from and the
sha256 of its content. It is written atomically (temp file, then rename) and verified on load, so a
half-written or edited file is rebuilt rather than trusted.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Callable, Iterable, Iterator


def cache_root() -> Path:
    """$CCQ_EVAL_CACHE, or ~/.cache/ccq-eval where it is unset or empty (never the current folder)."""
    return Path(os.environ.get("CCQ_EVAL_CACHE") or Path.home() / ".cache" / "ccq-eval").expanduser()


def check_cache_root() -> Path:
    """The cache can be created and written, checked before a run or a fetch starts any work."""
    from ccq_eval.output_paths import check_output_folder

    return check_output_folder(cache_root(), "the data cache (CCQ_EVAL_CACHE)")


def stable_hash(obj) -> str:
    """sha256 of a JSON-serialisable object, independent of key order."""
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def file_sha256(*paths: Path) -> str:
    """The sha256 of the files' bytes, in order, read a mebibyte at a time (a checkpoint's shards: one digest)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def content_hash(records: list[dict]) -> str:
    digest = hashlib.sha256()
    for record in records:
        digest.update(json.dumps(record, sort_keys=True, separators=(",", ":")).encode())
        digest.update(b"\n")
    return digest.hexdigest()


def atomic_write(path: Path, text: str | Iterable[str]) -> None:
    """Written to a temporary file, then renamed: an exception (from ``text``'s iterator too) leaves nothing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_dir() and not path.is_symlink():  # an entry that is a folder is unreadable: make room to rebuild it
        shutil.rmtree(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for chunk in [text] if isinstance(text, str) else text:
                handle.write(chunk)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load_frozen(path: Path) -> tuple[list[dict], str] | None:
    """The records and their content hash, or None when missing, incomplete or altered."""
    meta_path = path.with_suffix(".meta.json")
    if not path.exists() or not meta_path.exists():
        return None
    try:  # unreadable in any way (a folder, bad bytes, a sidecar that is not an object): rebuilt, never fatal
        meta = json.loads(meta_path.read_text())
        records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
    except (ValueError, OSError, RecursionError):
        return None
    if not isinstance(meta, dict) or not all(isinstance(r, dict) for r in records):
        return None
    digest = content_hash(records)
    if digest != meta.get("content_sha256"):
        return None
    return records, digest


def freeze(path: Path, records: list[dict], key: dict) -> str:
    """Write records and their sidecar; returns the content hash."""
    return freeze_stream(path, records, lambda: key)[0]


def freeze_stream(path: Path, records: Iterable[dict], key: Callable[[], dict],
                  refuse_empty: Callable[[], Exception] | None = None) -> tuple[str, int]:
    """Write records as they arrive (memory holds one), then their sidecar with ``key()`` (which may count what
    the stream saw); returns (content hash, records written). An exception mid-stream, or ``refuse_empty()``
    when no record came, leaves nothing under the final names."""
    digest, count = hashlib.sha256(), 0

    def lines() -> Iterator[str]:
        nonlocal count
        for record in records:
            digest.update(json.dumps(record, sort_keys=True, separators=(",", ":")).encode() + b"\n")  # content_hash
            count += 1
            yield json.dumps(record, ensure_ascii=False) + "\n"
        if count == 0 and refuse_empty is not None:
            raise refuse_empty()

    atomic_write(path, lines())
    atomic_write(path.with_suffix(".meta.json"), json.dumps({"key": key(), "content_sha256": digest.hexdigest()},
                                                             indent=1))
    return digest.hexdigest(), count


def load_or_build(path: Path, key: dict, build: Callable[[], list[dict]]) -> tuple[list[dict], str, bool]:
    """(records, content hash, reused?) — built once per key, then read back from the cache."""
    cached = load_frozen(path)
    if cached is not None:
        return cached[0], cached[1], True
    records = build()
    return records, freeze(path, records, key), False


def tokenizer_fingerprint(tokenizer) -> str:
    """sha256 of the tokenizer's full definition and special-token behaviour (part of every data key)."""
    backend = getattr(tokenizer, "backend_tokenizer", None)
    body = backend.to_str() if backend is not None else json.dumps(sorted(tokenizer.get_vocab().items()))
    specials = json.dumps({"bos": tokenizer.bos_token, "eos": tokenizer.eos_token,
                           "probe": tokenizer("probe")["input_ids"]})
    return hashlib.sha256((body + specials).encode()).hexdigest()


def frozen_by_content(folder: str) -> dict[str, Path]:
    """content sha256 -> the frozen dataset file holding it, for every dataset under cache_root()/``folder``
    (the viewer finds a unit's prompts by its stored dataset fingerprint)."""
    found = {}
    for meta_path in sorted((cache_root() / folder).glob("*.meta.json")):
        try:
            meta = json.loads(meta_path.read_text())
        except (ValueError, OSError, RecursionError):
            continue
        if isinstance(meta, dict) and isinstance(meta.get("content_sha256"), str):
            found[meta["content_sha256"]] = meta_path.with_name(meta_path.name.removesuffix(".meta.json") + ".jsonl")
    return found


class FrozenByContent:
    """Frozen datasets found by their content sha256 (a unit's stored dataset fingerprint), each folder indexed once
    and each dataset read once: the viewer's needle context and `ccq-eval rescore` read a unit's records this way."""

    def __init__(self):
        self._index: dict[str, dict[str, Path]] = {}
        self._records: dict[tuple[str, str | None], list[dict] | None] = {}

    def records(self, folder: str, fingerprint: str | None) -> list[dict] | None:
        """The records under cache_root()/``folder`` with this content, or None when the cache no longer holds them
        unchanged (gone, or edited since the unit ran)."""
        if (folder, fingerprint) not in self._records:
            if folder not in self._index:
                self._index[folder] = frozen_by_content(folder)
            path = self._index[folder].get(fingerprint or "")
            loaded = load_frozen(path) if path is not None else None
            self._records[(folder, fingerprint)] = loaded[0] if loaded is not None and loaded[1] == fingerprint else None
        return self._records[(folder, fingerprint)]
