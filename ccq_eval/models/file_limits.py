"""How large a checkpoint's metadata files may be. Configs, weight indexes and tokenizers are read whole (JSON
parsed, tokenizers built), so a multi-GB one would exhaust memory before any error could name it; the largest
real ones are tens of MB (a 256K-entry tokenizer.json is ~35 MB). Weights are not capped: safetensors are
memory-mapped."""

from __future__ import annotations

import fnmatch
from pathlib import Path, PurePosixPath

MB = 1 << 20
# Loading a tokenizer costs several times its files (transformers held 2.8 GB for a 500 MB tokenizer.json,
# 5.6x): 128 MB, over 3x the largest real one, keeps a load under ~1 GB on the smallest machine this runs on.
TOKENIZER_MOST = 128 * MB
# first match wins: (file name pattern, most bytes)
LIMITS = (("tokenizer.json", TOKENIZER_MOST), ("vocab.json", TOKENIZER_MOST), ("*.index.json", 64 * MB),
          ("*.json", 16 * MB), ("tokenizer.model", TOKENIZER_MOST), ("merges.txt", TOKENIZER_MOST))


def limit_of(name: str) -> int | None:
    return next((most for pattern, most in LIMITS if fnmatch.fnmatch(name, pattern)), None)


def oversized(name: str, size: int | None) -> str | None:
    """'<name> is N MB, over the M MB ...' when a metadata file is larger than any real one, else None."""
    most = limit_of(name)
    if most is None or size is None or size <= most:
        return None
    return f"{name} is {size / MB:,.0f} MB, over the {most // MB} MB any real checkpoint's {name} stays under"


def first_oversized(folder: Path) -> str | None:
    """The first oversized metadata file in a checkpoint folder, as ``oversized`` says it, or None."""
    for file in sorted(folder.iterdir()) if folder.is_dir() else []:
        if file.is_file() and (said := oversized(file.name, file.stat().st_size)):
            return said
    return None


def is_plain_file_name(name) -> bool:
    """A name inside the folder, judged by the name itself: in the HF cache every snapshot file is a symlink
    into ../../blobs/, so where a shard's link resolves says nothing about what the index asked for."""
    if not isinstance(name, str) or not name or "\\" in name or "\0" in name:
        return False
    parts = PurePosixPath(name).parts
    return not PurePosixPath(name).is_absolute() and ".." not in parts and bool(parts)
