"""The SQLite results store: runs, units, metrics and samples (schema: docs/architecture.md).

One transaction per unit, written when the unit ends, so a killed run leaves only whole units; ids
are UUIDs so stores from several machines merge. WAL journal and a busy timeout let several
processes write one store.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from contextlib import closing
from datetime import datetime, timezone
from pathlib import Path

from ccq_eval.errors import BadInput, StoreWriteFailure

SCHEMA_VERSION = 1
BUSY_TIMEOUT_MS = 60_000

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
    started TEXT NOT NULL, finished TEXT NOT NULL, dataset_fingerprint TEXT, settings TEXT NOT NULL
);
CREATE INDEX units_by_key ON units (unit_key, status);
CREATE UNIQUE INDEX units_one_complete_per_key ON units (unit_key) WHERE status = 'complete';
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


def _in_memory_uri(path: str) -> bool:
    """A ``file:`` URI that SQLite keeps in memory (``mode=memory``, an empty or ``:memory:`` name)."""
    from urllib.parse import parse_qs, urlsplit

    if not path.startswith("file:"):
        return False
    parts = urlsplit(path)
    name = parts.path or parts.netloc
    return "memory" in parse_qs(parts.query).get("mode", []) or name in ("", ":memory:")


def _schema_columns() -> dict[str, list[str]]:
    """table -> its columns in order, as SCHEMA defines them."""
    with closing(sqlite3.connect(":memory:")) as db:
        db.executescript(SCHEMA)
        return {t: [r[1] for r in db.execute(f"PRAGMA table_info({t})")] for t in TABLES}


class StoreError(BadInput):
    """A store that cannot be opened or written; the message names the file and the fix."""


class StoreWriteError(StoreWriteFailure):
    """A write that failed mid-run (disk full, store turned read-only): the transaction was rolled
    back, so the store holds only whole units; the message names the file and the fix."""


class RunDeleted(StoreWriteError):
    """The run a unit belongs to is gone (``runs --delete`` from another shell)."""


def _writes(method):
    """Turns SQLite's write failures into StoreWriteError; the transaction has rolled back by then."""
    def wrapper(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except StoreWriteError:
            raise
        except (sqlite3.OperationalError, sqlite3.DatabaseError, OSError) as exc:
            raise StoreWriteError(f"store {self.path!r}: cannot write ({exc}); nothing partial was kept — "
                                  "free disk space or make the store writable, then rerun to resume") from exc
    wrapper.__name__, wrapper.__doc__ = method.__name__, method.__doc__
    return wrapper


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_id() -> str:
    return str(uuid.uuid4())


RUN_JSON_COLUMNS = ("model_config", "ccq_overrides", "seeds", "versions")


def _first_non_json_object(row: dict, columns) -> str | None:
    """The first of the columns whose text is not a JSON object (tables and curves parse them), or None."""
    for column in columns:
        try:
            if not isinstance(json.loads(row[column]), dict):
                return column
        except (TypeError, ValueError, RecursionError):
            return column
    return None


def _untrusted_unit(source: "Store", unit: dict) -> str | None:
    """Why a unit from another store cannot be merged (the runner never writes such a unit), or None: settings
    that are not a JSON object, a metric whose value is text or infinite, a count that is not an integer."""
    if _first_non_json_object(unit, ("settings",)) is not None:
        return "has settings that are not a JSON object"
    bad = source.query(
        "SELECT metric, typeof(value) AS kind FROM metrics WHERE unit_id = ? AND (typeof(value) NOT IN ('real', "
        "'integer') OR value IN (9e999, -9e999) OR (stderr IS NOT NULL AND (typeof(stderr) NOT IN ('real', "
        "'integer') OR stderr IN (9e999, -9e999))) OR (n IS NOT NULL AND typeof(n) != 'integer'))", (unit["id"],))
    if bad:
        return f"has a {bad[0]['metric']} that is not a finite number ({bad[0]['kind']} value or stderr, or a count)"
    return None


class Store:
    """``Store(path)`` opens (creating if needed) a store; ``path`` may be a ``file:...`` SQLite URI."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = str(path)
        self.readonly = readonly
        if not self.path.strip() or self.path.strip() in (":memory:", "file::memory:") or _in_memory_uri(self.path):
            # SQLite would open a temporary database: every result would be saved nowhere
            raise StoreError(f"store {self.path!r}: not a file; pass --store PATH (default results/ccq.db)")
        uri = self.path.startswith("file:")
        if not uri:
            file = Path(self.path)
            if readonly and not file.exists():
                raise StoreError(f"store {self.path!r}: no such file; run a suite first or pass --store")
            if not readonly:
                try:
                    file.parent.mkdir(parents=True, exist_ok=True)
                except OSError as exc:
                    raise StoreError(f"store {self.path!r}: cannot create its folder ({exc.strerror}); pass a writable --store") from exc
        target = self.path if uri else (f"file:{self.path}?mode=ro" if readonly else self.path)
        try:
            self.db = sqlite3.connect(target, uri=uri or readonly, timeout=BUSY_TIMEOUT_MS / 1000,
                                      isolation_level=None)
            self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            self.db.execute("PRAGMA foreign_keys = ON")
            self._check_schema()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"store {self.path!r}: not a readable ccq-eval store ({exc}); move it aside or pass another --store") from exc
        if not readonly:
            self._check_writable()
            self._ensure_one_complete_per_key()

    def _check_schema(self) -> None:
        version = self.db.execute("PRAGMA user_version").fetchone()[0]
        present = {r[0] for r in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if version > SCHEMA_VERSION:
            raise StoreError(f"store {self.path!r}: schema version {version} is newer than this ccq-eval's ({SCHEMA_VERSION}); upgrade ccq-eval")
        if version == 0 and not present:
            if self.readonly:
                raise StoreError(f"store {self.path!r}: empty; run a suite first")
            with self.transaction():  # re-checked under the write lock: another process may have created it
                if not self.db.execute("SELECT 1 FROM sqlite_master WHERE name = 'runs'").fetchone():
                    for statement in filter(str.strip, SCHEMA.split(";")):
                        self.db.execute(statement)
                    self.db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            return
        if not set(TABLES) <= present or version == 0:
            raise StoreError(f"store {self.path!r}: not a ccq-eval store (tables {sorted(present)}); move it aside or pass another --store")
        for table, expected in _schema_columns().items():
            found = [r[1] for r in self.db.execute(f"PRAGMA table_info({table})")]
            if found != expected:
                extra, missing = sorted(set(found) - set(expected)), sorted(set(expected) - set(found))
                raise StoreError(f"store {self.path!r}: table {table} has other columns than a ccq-eval store's "
                                 f"(extra {extra or 'none'}, missing {missing or 'none'}); move it aside or pass another --store")

    def check_integrity(self) -> None:
        """Every page readable (``PRAGMA quick_check``): a source is read whole before anything is merged from it."""
        try:
            result = [r[0] for r in self.db.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from exc
        if result != ["ok"]:
            raise StoreError(f"store {self.path!r}: damaged ({result[0][:120]}); restore it from a copy")

    def _check_writable(self) -> None:
        try:
            self._use_wal()
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("UPDATE runs SET status = status WHERE 0")
            self.db.execute("ROLLBACK")
        except (sqlite3.OperationalError, OSError) as exc:
            raise StoreError(f"store {self.path!r}: cannot write ({exc}); pass a writable --store") from exc

    def _ensure_one_complete_per_key(self) -> None:
        """Stores made before the rule get its index; one that already holds two complete results for a key
        (written by older versions) keeps them, and write_unit's check still stops any new one."""
        try:
            with self.transaction():
                self.db.execute("CREATE UNIQUE INDEX IF NOT EXISTS units_one_complete_per_key ON units (unit_key) "
                                "WHERE status = 'complete'")
        except sqlite3.IntegrityError:
            pass

    def _use_wal(self) -> None:
        """Switch to the WAL journal (readers never block the writer). Another process may hold the
        store at that moment (several writers start together): retry while it is busy."""
        for _ in range(200):
            try:
                self.db.execute("PRAGMA journal_mode = WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) and "busy" not in str(exc):
                    raise
                time.sleep(0.05)
        raise sqlite3.OperationalError("database is locked (could not switch to the WAL journal)")

    def transaction(self):
        return _Transaction(self.db)

    def close(self) -> None:
        self.db.close()

    # --- writing ------------------------------------------------------------------------------------

    @_writes
    def begin_run(self, run: dict) -> str:
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now(), "status": "running"}
        row = {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in run.items()}
        with self.transaction():
            self.db.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                            tuple(row.values()))
        return run["id"]

    @_writes
    def finish_run(self, run_id: str, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?", (now(), status, run_id))

    @_writes
    def write_unit(self, unit: dict, metrics: list[dict], samples: list[dict], replace: bool = False) -> str | None:
        """The unit, its metric rows and its samples, in one transaction. A store holds one complete result per
        unit key: when another process completed the key first, nothing is written and None is returned;
        ``replace`` (--force) removes the earlier result instead."""
        unit_id = unit.get("id") or new_id()
        with self.transaction():  # BEGIN IMMEDIATE: the check and the insert see no other writer between them
            if self.db.execute("SELECT 1 FROM runs WHERE id = ?", (unit["run_id"],)).fetchone() is None:
                raise RunDeleted(f"store {self.path!r}: run {unit['run_id']} was deleted while it ran; nothing more "
                                 "is written — rerun the command to resume into a new run")
            if unit["status"] == "complete":
                earlier = [r[0] for r in self.db.execute(
                    "SELECT id FROM units WHERE unit_key = ? AND status = 'complete'", (unit["unit_key"],))]
                if earlier and not replace:
                    return None
                self.db.executemany("DELETE FROM units WHERE id = ?", [(e,) for e in earlier])
            self._insert_unit(unit_id, unit, metrics, samples)
        return unit_id

    @_writes
    def add_finished_run(self, run: dict, units: list[tuple[dict, list[dict], list[dict]]]) -> tuple[str, int, int]:
        """A run computed elsewhere (another tool's results), with its complete units, in one transaction:
        (run id, units added, units skipped because a result for their key is already here)."""
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now()}
        run = {**run, "finished": run.get("finished") or run["started"], "status": "complete"}
        row = {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in run.items()}
        added = skipped = 0
        with self.transaction():
            self.db.execute(f"INSERT INTO runs ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                            tuple(row.values()))
            for unit, metrics, samples in units:
                if self.db.execute("SELECT 1 FROM units WHERE unit_key = ? AND status = 'complete'",
                                   (unit["unit_key"],)).fetchone():
                    skipped += 1
                    continue
                self._insert_unit(new_id(), {**unit, "run_id": run["id"]}, metrics, samples)
                added += 1
            if not added:  # everything was here already: leave no empty run behind
                self.db.execute("DELETE FROM runs WHERE id = ?", (run["id"],))
        return run["id"], added, skipped

    def _insert_unit(self, unit_id: str, unit: dict, metrics: list[dict], samples: list[dict]) -> None:
        """Rows of one unit; the caller holds the transaction."""
        self.db.execute(
            "INSERT INTO units (id, run_id, suite, task, context_length, unit_key, status, reason, started, "
            "finished, dataset_fingerprint, settings) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (unit_id, unit["run_id"], unit["suite"], unit["task"], unit["context_length"], unit["unit_key"],
             unit["status"], unit.get("reason"), unit["started"], unit.get("finished") or now(),
             unit.get("dataset_fingerprint"), json.dumps(unit.get("settings", {}), sort_keys=True)))
        self.db.executemany(
            "INSERT INTO metrics (unit_id, run_id, label, model, suite, task, context_length, metric, value, "
            "stderr, n, higher_is_better, is_primary) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(unit_id, unit["run_id"], m["label"], m["model"], unit["suite"], unit["task"],
              unit["context_length"], m["metric"], m["value"], m.get("stderr"), m.get("n"),
              int(m.get("higher_is_better", True)), int(m.get("is_primary", False))) for m in metrics])
        self.db.executemany(
            "INSERT INTO samples (unit_id, idx, prompt_sha256, target, prediction, score, fields) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(unit_id, s["idx"], s.get("prompt_sha256"), s.get("target"), s.get("prediction"), s.get("score"),
              json.dumps(s.get("fields", {}), sort_keys=True)) for s in samples])

    @_writes
    def delete_run(self, run_id: str) -> int:
        with self.transaction():
            return self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount

    REQUIRED_PROVENANCE = ("label", "model_spec", "weights_sha256", "model_config", "dtype", "device", "versions")

    @_writes
    def ingest(self, other: "Store") -> tuple[int, int, int, list[str]]:
        """Copy other's runs and their units, metrics and samples: (runs added, units added, complete units
        skipped because this store already holds a result for their key, refusals). Ids already here are
        skipped, so ingesting twice adds nothing. Runs without the provenance the contract requires are refused."""
        added_runs = added_units = already_complete = 0
        refused = []
        with self.transaction():
            for run in other.query("SELECT * FROM runs"):
                run = dict(run)
                lacking = [k for k in self.REQUIRED_PROVENANCE if run.get(k) in (None, "", "{}")]
                if lacking:
                    refused.append(f"run {run['id']} lacks {', '.join(lacking)}")
                    continue
                if (column := _first_non_json_object(run, RUN_JSON_COLUMNS)) is not None:
                    refused.append(f"run {run['id']} has a {column} that is not a JSON object")
                    continue
                if self.db.execute("SELECT 1 FROM runs WHERE id = ?", (run["id"],)).fetchone() is None:
                    self.db.execute(f"INSERT INTO runs ({', '.join(run)}) VALUES ({', '.join('?' * len(run))})",
                                    tuple(run.values()))
                    added_runs += 1
                for unit in other.query("SELECT * FROM units WHERE run_id = ?", (run["id"],)):
                    unit = dict(unit)
                    if self.db.execute("SELECT 1 FROM units WHERE id = ?", (unit["id"],)).fetchone():
                        continue
                    if unit["status"] == "complete" and self.db.execute(
                            "SELECT 1 FROM units WHERE unit_key = ? AND status = 'complete'", (unit["unit_key"],)).fetchone():
                        already_complete += 1  # one complete result per unit key: the one here is kept
                        continue
                    if (why := _untrusted_unit(other, unit)) is not None:
                        refused.append(f"unit {unit['id']} ({unit['task']}@{unit['context_length']}) {why}")
                        continue
                    self.db.execute(f"INSERT INTO units ({', '.join(unit)}) VALUES ({', '.join('?' * len(unit))})",
                                    tuple(unit.values()))
                    for table in ("metrics", "samples"):
                        for row in other.query(f"SELECT * FROM {table} WHERE unit_id = ?", (unit["id"],)):
                            row = dict(row)
                            self.db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                                            tuple(row.values()))
                    added_units += 1
        return added_runs, added_units, already_complete, refused

    # --- reading ------------------------------------------------------------------------------------

    def _unreadable(self, exc: Exception) -> StoreError:
        cause = str(exc).splitlines()[0].rsplit("': ", 1)[-1] if str(exc) else exc.__class__.__name__  # pandas quotes the SQL
        return StoreError(f"store {self.path!r}: cannot be read ({cause}); restore it from a copy, or rerun into "
                          "another --store")

    def complete_unit_keys(self) -> set[str]:
        """The keys of the complete units (one result each)."""
        return {r[0] for r in self.query("SELECT unit_key FROM units WHERE status = 'complete'")}

    def units_of_run(self, run_id: str) -> list[tuple[str, int, str]]:
        """(task, context length, status) of each unit a run stored, in the order it stored them."""
        return [tuple(r) for r in self.query("SELECT task, context_length, status FROM units WHERE run_id = ? "
                                             "ORDER BY rowid", (run_id,))]

    def labels_of_keys(self, keys: list[str]) -> list[str]:
        """The labels of the runs that hold complete units with these keys."""
        labels: set[str] = set()
        for start in range(0, len(keys), 500):  # SQLite bounds the number of parameters
            chunk = keys[start:start + 500]
            labels |= {r[0] for r in self.query(
                f"SELECT DISTINCT r.label FROM units u JOIN runs r ON r.id = u.run_id WHERE u.status = 'complete' "
                f"AND u.unit_key IN ({', '.join('?' * len(chunk))})", tuple(chunk))}
        return sorted(labels)

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        try:
            with closing(self.db.cursor()) as cursor:
                cursor.row_factory = sqlite3.Row
                return cursor.execute(sql, params).fetchall()
        except sqlite3.DatabaseError as exc:  # a corrupted page, a file cut short
            raise self._unreadable(exc) from exc

    def frame(self, sql: str, params: tuple = ()):
        import pandas as pd

        try:
            return pd.read_sql_query(sql, self.db, params=params)
        except (sqlite3.DatabaseError, pd.errors.DatabaseError) as exc:
            raise self._unreadable(exc) from exc


class _Transaction:
    """BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on any exception (a killed process rolls back by itself)."""

    def __init__(self, db: sqlite3.Connection):
        self.db = db

    def __enter__(self):
        if not self.db.in_transaction:
            self.db.execute("BEGIN IMMEDIATE")
            self.owner = True
        else:
            self.owner = False
        return self.db

    def __exit__(self, kind, value, traceback):
        if not self.owner:
            return False
        if kind is None:
            self.db.execute("COMMIT")
        elif self.db.in_transaction:  # SQLite may have rolled back already (a full disk does)
            self.db.execute("ROLLBACK")
        return False
