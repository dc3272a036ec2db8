"""The store, composed: one connection (connection.py) and the parts that use it, its named reads (reads.py), its
writes (writes.py) and its merging (ingest.py). ``Store(path)`` is the one opener; a caller names the part that
answers (``store.reads.units()``, ``store.writes.write_unit(...)``, ``store.merging.ingest(...)``, raw SQL and
transactions on ``store.connection``), so a new read is written once, in its part."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.store.connection import Connection
from ccq_eval.store.ingest import Ingest
from ccq_eval.store.reads import Reads
from ccq_eval.store.writes import Writes


class Store:
    """``Store(path)`` opens (creating if needed) a store; ``Store(path, readonly=True)`` only reads one."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.connection = Connection(path, readonly)
        self.reads = Reads(self.connection)
        self.writes = Writes(self.connection)
        self.merging = Ingest(self.connection, self.writes)

    @property
    def path(self) -> str:
        return self.connection.path

    def close(self) -> None:
        self.connection.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc) -> None:  # closed: the write-ahead log folded in, the file is the whole store
        self.close()
