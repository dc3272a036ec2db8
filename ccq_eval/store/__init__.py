"""The SQLite results store (schema: docs/architecture.md): the only place in ccq-eval that writes SQL.

store.py (Store: one connection and the parts over it, composed), schema.py (tables, version, the check on open),
connection.py (opening, WAL, transactions), writes.py (one transaction per unit), reads.py (the named reads every
other module uses), rows.py (their typed rows), ingest.py + checks.py (merging another store, refusing what the
runner never writes).
"""

from __future__ import annotations

from ccq_eval.store.errors import RunDeleted, StoreError, StoreWriteError
from ccq_eval.store.rows import MetricRow, RunBundle, RunRow, SampleRow, UnitBundle, UnitRow
from ccq_eval.store.schema import SCHEMA_VERSION
from ccq_eval.store.store import Store
from ccq_eval.store.writes import new_id, now

__all__ = ["SCHEMA_VERSION", "MetricRow", "RunBundle", "RunDeleted", "RunRow", "SampleRow", "Store", "StoreError",
           "StoreWriteError", "UnitBundle", "UnitRow", "new_id", "now"]
