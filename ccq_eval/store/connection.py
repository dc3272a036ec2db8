"""Opening a store file: refusing what would save results nowhere, the schema check, the WAL journal and a
busy timeout (several processes write one store), transactions, and reads that turn a damaged file into
one line."""

from __future__ import annotations

import sqlite3
import time
from contextlib import closing
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ccq_eval.store.errors import StoreError
from ccq_eval.store.schema import SCHEMA_VERSION, create_or_check, ensure_one_computed_per_key, migrate

BUSY_TIMEOUT_MS = 60_000


def _in_memory_uri(path: str) -> bool:
    """A ``file:`` URI that SQLite keeps in memory (``mode=memory``, an empty or ``:memory:`` name)."""
    if not path.startswith("file:"):
        return False
    parts = urlsplit(path)
    name = parts.path or parts.netloc
    return "memory" in parse_qs(parts.query).get("mode", []) or name in ("", ":memory:")


class Connection:
    """``Connection(path)`` opens (creating if needed) a store at a file's path (a ``file:`` SQLite URI is refused:
    its query would decide whether the store is created, read-only or kept in memory, past every check here)."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.path = str(path)
        self.readonly = readonly
        if not self.path.strip() or self.path.strip() in (":memory:", "file::memory:") or _in_memory_uri(self.path):
            # SQLite would open a temporary database: every result would be saved nowhere
            raise StoreError(f"store {self.path!r}: not a file; pass --store PATH (default results/ccq.db)")
        if self.path.startswith("file:"):
            raise StoreError(f"store {self.path!r}: a SQLite URI, not a path; pass the file's path (--store PATH)")
        self._check_file(Path(self.path))
        target = Path(self.path).resolve().as_uri() + "?mode=ro" if readonly else self.path
        try:
            try:
                self._open(target, readonly)
            except sqlite3.OperationalError:
                if not (readonly and self._closed_cleanly()):
                    raise
                # a store in a folder this user cannot write: SQLite's WAL mode wants to create its shared-memory file
                # there even to read. Closed cleanly (no write-ahead log beside it), the file alone is the whole store.
                self._open(Path(self.path).resolve().as_uri() + "?mode=ro&immutable=1", True)
        except sqlite3.DatabaseError as exc:
            if not readonly and self._readable_read_only():
                raise StoreError(f"store {self.path!r}: readable but not writable ({exc}; SQLite also writes a -wal "
                                 "and a -shm file beside it); make the file and its folder writable, or copy it to a "
                                 "writable --store") from exc
            raise StoreError(f"store {self.path!r}: not a readable ccq-eval store ({exc}); move it aside or pass "
                             "another --store") from exc
        if not readonly:
            self._check_writable()
            if (version := self.version) < SCHEMA_VERSION:
                migrate(self, version)
            ensure_one_computed_per_key(self)

    def _open(self, target: str, uri: bool) -> None:
        self.db = sqlite3.connect(target, uri=uri, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        self.db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        self.db.execute("PRAGMA foreign_keys = ON")
        create_or_check(self)

    def _readable_read_only(self) -> bool:
        """The file opens as a ccq-eval store when nothing is to be written (what a writable open could not do)."""
        try:
            probe = sqlite3.connect(Path(self.path).resolve().as_uri() + "?mode=ro&immutable=1", uri=True)
        except sqlite3.Error:
            return False
        try:
            names = {r[0] for r in probe.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            return {"runs", "units", "metrics", "samples"} <= names
        except sqlite3.Error:
            return False
        finally:
            probe.close()

    def _closed_cleanly(self) -> bool:
        """No write-ahead log with content beside the store: every commit is in the file itself."""
        wal = Path(self.path + "-wal")
        return not wal.exists() or wal.stat().st_size == 0

    def _check_file(self, file: Path) -> None:
        for suffix in ("-wal", "-shm"):  # SQLite's journal files beside the store: a folder there fails every open
            beside = file.with_name(file.name + suffix)
            if beside.exists() and not beside.is_file():
                raise StoreError(f"store {self.path!r}: {beside.name} beside it, where SQLite keeps its "
                                 f"{'write-ahead log' if suffix == '-wal' else 'shared memory'}, is not a file; move "
                                 "it aside (the store itself is untouched)")
        if self.readonly and not file.exists():
            raise StoreError(f"store {self.path!r}: no such file; run a suite first or pass --store")
        if not self.readonly:
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise StoreError(f"store {self.path!r}: cannot create its folder ({exc.strerror}); pass a writable "
                                 "--store") from exc

    def _check_writable(self) -> None:
        try:
            self._use_wal()
            self.db.execute("BEGIN IMMEDIATE")
            self.db.execute("UPDATE runs SET status = status WHERE 0")
            self.db.execute("ROLLBACK")
        except (sqlite3.OperationalError, OSError) as exc:
            raise StoreError(f"store {self.path!r}: cannot write ({exc}); pass a writable --store") from exc

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

    def check_integrity(self) -> None:
        """Every page readable (``PRAGMA quick_check``): a source is read whole before anything is merged from it."""
        try:
            result = [r[0] for r in self.db.execute("PRAGMA quick_check")]
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from exc
        if result != ["ok"]:
            raise StoreError(f"store {self.path!r}: damaged ({result[0][:120]}); restore it from a copy")

    @property
    def version(self) -> int:
        """The store's schema version (an older one is read as it is, and migrated when opened to write)."""
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def transaction(self):
        return Transaction(self.db)

    def copy_to(self, path: str | Path) -> None:
        """A consistent copy of the whole store at ``path`` (SQLite's online backup: writers may go on)."""
        try:
            with closing(sqlite3.connect(str(path))) as target:
                self.db.backup(target)
        except sqlite3.DatabaseError as exc:
            raise self._unreadable(exc) from exc

    def close(self) -> None:
        self.db.close()

    def _unreadable(self, exc: Exception) -> StoreError:
        cause = str(exc).splitlines()[0].rsplit("': ", 1)[-1] if str(exc) else exc.__class__.__name__  # pandas quotes the SQL
        return StoreError(f"store {self.path!r}: cannot be read ({cause}); restore it from a copy, or rerun into "
                          "another --store")

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        """Rows of one statement (the store's own modules and the tests; everything else reads through the
        named reads in reads.py)."""
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


class Part:
    """One part of a store (its reads, its writes, its merging), over the store's one connection."""

    def __init__(self, connection: Connection):
        self.connection = connection

    @property
    def db(self) -> sqlite3.Connection:
        return self.connection.db

    @property
    def path(self) -> str:
        return self.connection.path

    def transaction(self):
        return self.connection.transaction()

    def query(self, sql: str, params: tuple = ()) -> list[sqlite3.Row]:
        return self.connection.query(sql, params)

    def frame(self, sql: str, params: tuple = ()):
        return self.connection.frame(sql, params)


class Transaction:
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
