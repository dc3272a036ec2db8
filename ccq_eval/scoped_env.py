"""Environment variables set for the duration of a block, then restored (unset ones unset again): how a few
libraries are told things they offer no argument for (lm-eval's DISABLE_MULTIPROC, argparse's COLUMNS, the HF
offline flags)."""

from __future__ import annotations

import contextlib
import os
from typing import Iterator


@contextlib.contextmanager
def scoped_environ(**values: str) -> Iterator[None]:
    saved = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
