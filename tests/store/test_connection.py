"""Opening a store: what a file that cannot be opened as asked is called."""

import pytest


def test_a_store_that_can_be_read_but_not_written_is_called_that(tmp_path, monkeypatch):
    """A store in a folder this user cannot write (SQLite's -wal and -shm files go beside it): opened to write, it is
    named readable but not writable, not "not a readable store". Root writes anywhere, so the refusal SQLite gives
    such a user is stood in for."""
    import sqlite3

    from ccq_eval.store import Store
    from ccq_eval.store import connection
    from ccq_eval.store.errors import StoreError

    path = tmp_path / "s.db"
    Store(path).close()
    opened = connection.Connection._open

    def refuse_writes(self, target, uri):
        if "mode=ro" not in target:
            raise sqlite3.OperationalError("unable to open database file")
        return opened(self, target, uri)

    monkeypatch.setattr(connection.Connection, "_open", refuse_writes)
    with pytest.raises(StoreError, match="readable but not writable"):
        Store(path)
    Store(path, readonly=True).close()  # and it reads
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all, " * 100)
    with pytest.raises(StoreError, match="not a readable ccq-eval store"):
        Store(tmp_path / "junk.db")
