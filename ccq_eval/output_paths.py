"""The one check of every folder the CLI will write into (``--out``, the data cache), made before any work:
a path under a regular file, a folder that cannot be written, or an output file that is a folder is a
one-line BadInput naming the flag, not a traceback from ``mkdir`` or ``open`` after the work is done."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

from ccq_eval.errors import BadInput


def check_output_folder(folder: Path, what: str, file_names: Iterable[str] = ()) -> Path:
    """``folder`` (created later, where missing) and the files to be written in it can be written."""
    folder = Path(folder).expanduser()
    existing = folder
    while not existing.exists() and existing != existing.parent:
        if existing.is_symlink():  # a dangling link: mkdir would fail on it
            raise BadInput(f"{what} {str(folder)!r}: {str(existing)!r} is a broken link; remove it or pass another folder")
        existing = existing.parent
    if not existing.is_dir():
        raise BadInput(f"{what} {str(folder)!r}: {str(existing)!r} is a file, not a folder; pass a folder path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise BadInput(f"{what} {str(folder)!r}: {str(existing)!r} is not writable; pass a folder you can write to")
    for name in file_names:
        target = folder / name
        if target.is_dir():
            raise BadInput(f"{what} {str(folder)!r}: {str(target)!r} is a folder where a file is written; move it aside")
        if target.exists() and not os.access(target, os.W_OK):
            raise BadInput(f"{what} {str(folder)!r}: {str(target)!r} is read-only; make it writable or pass another folder")
    return folder
