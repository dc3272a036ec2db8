"""The SQLite results store (schema: docs/architecture.md): the only place in ccq-eval that writes SQL.

schema.py (tables, version, the check on open), connection.py (opening, WAL, transactions), writes.py (one
transaction per unit), reads.py (the named reads every other module uses), rows.py (their typed rows),
ingest.py + checks.py (merging another store, refusing what the runner never writes).
"""

from __future__ import annotations

from pathlib import Path

from ccq_eval.store.connection import Connection
from ccq_eval.store.errors import RunDeleted, StoreError, StoreWriteError
from ccq_eval.store.ingest import Ingest
from ccq_eval.store.reads import Reads
from ccq_eval.store.rows import MetricRow, RunBundle, RunRow, SampleRow, UnitBundle, UnitRow
from ccq_eval.store.schema import SCHEMA_VERSION
from ccq_eval.store.writes import new_id, now


class Store(Reads, Ingest, Connection):
    """``Store(path)`` opens (creating if needed) a store; ``Store(path, readonly=True)`` only reads one."""

    def __init__(self, path: str | Path, readonly: bool = False):
        Connection.__init__(self, path, readonly)


__all__ = ["SCHEMA_VERSION", "MetricRow", "RunBundle", "RunDeleted", "RunRow", "SampleRow", "Store", "StoreError",
           "StoreWriteError", "UnitBundle", "UnitRow", "new_id", "now"]
