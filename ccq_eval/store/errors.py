"""The store's errors: a store that cannot be opened (bad input, exit 2) and a write that failed mid-run (exit 1)."""

from __future__ import annotations

from ccq_eval.errors import BadInput, StoreWriteFailure


class StoreError(BadInput):
    """A store that cannot be opened or written; the message names the file and the fix."""


class StoreWriteError(StoreWriteFailure):
    """A write that failed mid-run (disk full, store turned read-only): the transaction was rolled
    back, so the store holds only whole units; the message names the file and the fix."""


class RunDeleted(StoreWriteError):
    """The run a unit belongs to is gone (``runs --delete`` from another shell)."""
