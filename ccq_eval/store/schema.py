"""The store's schema (docs/architecture.md), its version, and the check a store must pass on open: the
version this ccq-eval knows, the four tables with exactly their columns. A new file gets the schema."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from functools import lru_cache

from ccq_eval.store.errors import StoreError

SCHEMA_VERSION = 3

SCHEMA = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY, label TEXT NOT NULL, model_spec TEXT NOT NULL, weights_sha256 TEXT NOT NULL,
    model_config TEXT NOT NULL, ccq_overrides TEXT NOT NULL, dtype TEXT NOT NULL, device TEXT NOT NULL,
    batch_size INTEGER NOT NULL, seeds TEXT NOT NULL, command_line TEXT NOT NULL, versions TEXT NOT NULL,
    git_sha TEXT, started TEXT NOT NULL, finished TEXT, status TEXT NOT NULL
);
CREATE TABLE units (
    id TEXT PRIMARY KEY, run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    suite TEXT NOT NULL, task TEXT NOT NULL, context_length INTEGER NOT NULL, unit_key TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('complete', 'failed')), reason TEXT,
    started TEXT NOT NULL, finished TEXT NOT NULL, dataset_fingerprint TEXT, settings TEXT NOT NULL,
    reused_from TEXT, seq INTEGER
);
CREATE INDEX units_by_key ON units (unit_key, status);
CREATE UNIQUE INDEX units_one_computed_per_key ON units (unit_key) WHERE status = 'complete' AND reused_from IS NULL;
CREATE TABLE metrics (
    unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE, run_id TEXT NOT NULL,
    label TEXT NOT NULL, model TEXT NOT NULL, suite TEXT NOT NULL, task TEXT NOT NULL,
    context_length INTEGER NOT NULL, metric TEXT NOT NULL, value REAL NOT NULL, stderr REAL, n INTEGER,
    higher_is_better INTEGER NOT NULL, is_primary INTEGER NOT NULL
);
CREATE INDEX metrics_by_unit ON metrics (unit_id);
CREATE TABLE samples (
    unit_id TEXT NOT NULL REFERENCES units(id) ON DELETE CASCADE, idx INTEGER NOT NULL,
    prompt_sha256 TEXT, target TEXT, prediction TEXT, score REAL, fields TEXT NOT NULL
);
CREATE INDEX samples_by_unit ON samples (unit_id);
"""
TABLES = ("runs", "units", "metrics", "samples")
# version 2 added units.reused_from: a label's unit whose result another label's run computed (the id of that
# unit); one computed result per unit key, and each label that asked for it holds a unit of its own
# version 3 added units.seq: the order units were written into this store (1, 2, ...; the next is one more than the
# largest), which decides a cell's newest unit; clocks tie and ids are random
ADDED_IN = {2: {"units": ("reused_from",)}, 3: {"units": ("seq",)}}
NEXT_SEQ = "(SELECT COALESCE(MAX(seq), 0) + 1 FROM units)"  # inside the writing transaction
RUN_JSON_COLUMNS = ("model_config", "ccq_overrides", "seeds", "versions")


@lru_cache(maxsize=None)
def schema_columns(version: int = SCHEMA_VERSION) -> dict[str, tuple[str, ...]]:
    """table -> its columns in order, as SCHEMA defines them (at an older ``version``: without what came later)."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA)
        later = {c for v, added in ADDED_IN.items() if v > version for c in sum(added.values(), ())}
        return {t: tuple(r[1] for r in db.execute(f"PRAGMA table_info({t})") if r[1] not in later) for t in TABLES}


def migrate(store, version: int) -> None:
    """A writable store of an older version brought to this one, in one transaction (re-checked under the
    write lock: another process may be migrating it too)."""
    db = store.db
    with store.transaction():
        if db.execute("PRAGMA user_version").fetchone()[0] != version:
            return
        if version < 2:
            db.execute("ALTER TABLE units ADD COLUMN reused_from TEXT")
            db.execute("DROP INDEX IF EXISTS units_one_complete_per_key")
            db.execute("CREATE UNIQUE INDEX IF NOT EXISTS units_one_computed_per_key ON units (unit_key) "
                       "WHERE status = 'complete' AND reused_from IS NULL")
        if version < 3:  # the units there numbered in the order the tables took them newest by before: finish, id
            db.execute("ALTER TABLE units ADD COLUMN seq INTEGER")
            db.execute("UPDATE units SET seq = (SELECT n FROM (SELECT id, ROW_NUMBER() OVER (ORDER BY finished, id) "
                       "AS n FROM units) AS numbered WHERE numbered.id = units.id)")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def create_or_check(store) -> None:
    """A new, empty file gets the schema (under the write lock: another process may be creating it too); any
    other file must be a store of this ccq-eval's schema version, or older, with exactly its columns."""
    db, path = store.db, store.path
    db.execute("BEGIN")  # one read: another process creating the store commits its tables and version together
    try:
        version = db.execute("PRAGMA user_version").fetchone()[0]
        present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    finally:
        db.execute("COMMIT")
    if version > SCHEMA_VERSION:
        raise StoreError(f"store {path!r}: schema version {version} is newer than this ccq-eval's ({SCHEMA_VERSION}); "
                         "upgrade ccq-eval")
    if version == 0 and not present:
        if store.readonly:
            raise StoreError(f"store {path!r}: empty; run a suite first")
        with store.transaction():
            if not db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
                for statement in filter(str.strip, SCHEMA.split(";")):
                    db.execute(statement)
                db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        return
    if not set(TABLES) <= present or version == 0:
        raise StoreError(f"store {path!r}: not a ccq-eval store (tables {sorted(present)}); move it aside or pass "
                         "another --store")
    for table, expected in schema_columns(version).items():
        found = tuple(r[1] for r in db.execute(f"PRAGMA table_info({table})"))
        if found != expected:
            extra, missing = sorted(set(found) - set(expected)), sorted(set(expected) - set(found))
            raise StoreError(f"store {path!r}: table {table} has other columns than a ccq-eval store's "
                             f"(extra {extra or 'none'}, missing {missing or 'none'}); move it aside or pass another "
                             "--store")


def ensure_one_computed_per_key(store) -> None:
    """Stores made before the rule get its index; one that already holds two computed results for a key
    (written by older versions) keeps them, and write_unit's check still stops any new one."""
    try:
        with store.transaction():
            store.db.execute("CREATE UNIQUE INDEX IF NOT EXISTS units_one_computed_per_key ON units (unit_key) "
                             "WHERE status = 'complete' AND reused_from IS NULL")
    except sqlite3.IntegrityError:
        pass
