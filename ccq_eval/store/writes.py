"""Writing: a run's record, each unit in one transaction when it ends (one complete result per unit key),
runs computed elsewhere, deleting a run."""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime, timezone

from ccq_eval.store.errors import RunDeleted, StoreWriteError


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_id() -> str:
    return str(uuid.uuid4())


def writes(method):
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


def _run_row(run: dict) -> dict:
    return {k: (json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v) for k, v in run.items()}


class Writes:
    """The write half of Store (a Connection)."""

    def _insert(self, table: str, row: dict) -> None:
        self.db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                        tuple(row.values()))

    def _complete_for_key(self, unit_key: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM units WHERE unit_key = ? AND status = 'complete'",
                                              (unit_key,))]

    @writes
    def begin_run(self, run: dict) -> str:
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now(), "status": "running"}
        with self.transaction():
            self._insert("runs", _run_row(run))
        return run["id"]

    @writes
    def finish_run(self, run_id: str, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?", (now(), status, run_id))

    @writes
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
                earlier = self._complete_for_key(unit["unit_key"])
                if earlier and not replace:
                    return None
                self.db.executemany("DELETE FROM units WHERE id = ?", [(e,) for e in earlier])
            self._insert_unit(unit_id, unit, metrics, samples)
        return unit_id

    @writes
    def add_finished_run(self, run: dict, units: list[tuple[dict, list[dict], list[dict]]]) -> tuple[str, int, int]:
        """A run computed elsewhere (another tool's results), with its complete units, in one transaction:
        (run id, units added, units skipped because a result for their key is already here)."""
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now()}
        run = {**run, "finished": run.get("finished") or run["started"], "status": "complete"}
        added = skipped = 0
        with self.transaction():
            self._insert("runs", _run_row(run))
            for unit, metrics, samples in units:
                if self._complete_for_key(unit["unit_key"]):
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

    @writes
    def delete_run(self, run_id: str) -> int:
        with self.transaction():
            return self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount
