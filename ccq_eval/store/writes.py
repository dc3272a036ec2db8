"""Writing: a run's record, each unit in one transaction when it ends (one complete result per unit key),
runs computed elsewhere, deleting a run."""

from __future__ import annotations

import json
import sqlite3
import uuid
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from ccq_eval.store.connection import Part
from ccq_eval.store.errors import RunDeleted, StoreWriteError
from ccq_eval.store.schema import NEXT_SEQ


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def after(stamp: str | None) -> str:
    """Now, or just after ``stamp`` if that is not earlier (a clock behind the one that wrote it): a rescore's unit
    is newer than its source whatever the clocks say."""
    current = now()
    if not stamp or current > stamp:
        return current
    try:
        return (datetime.fromisoformat(stamp) + timedelta(milliseconds=1)).isoformat(timespec="milliseconds")
    except ValueError:
        return current


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


class Written(NamedTuple):
    """What write_unit stored for a unit: its id (None: nothing, this label already holds the key's result) and,
    when the result is another run's, the id of the unit that computed it."""

    unit_id: str | None
    reused_from: str | None = None


class Writes(Part):
    """The writes of a store. One computed result per unit key; a label that asks for a key
    another label's run computed holds a unit of its own that reuses that result (``reused_from``: the metric
    rows and samples copied under its label), so every label shows its whole row and nothing is computed twice."""

    def insert(self, table: str, row: dict) -> None:
        """A row as given; a unit takes the store's next sequence number, whatever it carried elsewhere."""
        if table == "units":
            row = {k: v for k, v in row.items() if k != "seq"}
            self.db.execute(f"INSERT INTO units ({', '.join(row)}, seq) VALUES ({', '.join('?' * len(row))}, "
                            f"{NEXT_SEQ})", tuple(row.values()))
            return
        self.db.execute(f"INSERT INTO {table} ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})",
                        tuple(row.values()))

    def computed_for_key(self, unit_key: str) -> list[str]:
        return [r[0] for r in self.db.execute("SELECT id FROM units WHERE unit_key = ? AND status = 'complete' "
                                              "AND reused_from IS NULL ORDER BY rowid", (unit_key,))]

    def _held_by_label(self, unit_key: str, label: str) -> list[str]:
        """This label's complete units of a key, computed or reused."""
        return [r[0] for r in self.db.execute(
            "SELECT u.id FROM units u JOIN runs r ON r.id = u.run_id WHERE u.unit_key = ? AND u.status = 'complete' "
            "AND r.label = ?", (unit_key, label))]

    def _run_names(self, run_id: str) -> tuple[str, str]:
        """(label, model spec) of a run; RunDeleted when it is gone (``runs --delete`` from another shell)."""
        row = self.db.execute("SELECT label, model_spec FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RunDeleted(f"store {self.path!r}: run {run_id} was deleted while it ran; nothing more "
                             "is written — rerun the command to resume into a new run")
        return row[0], row[1]

    def _copy_result(self, source_id: str, unit_id: str, run_id: str, label: str, model: str) -> None:
        """The source unit's metric rows (under this label and model) and samples, onto unit_id."""
        self.db.execute(
            "INSERT INTO metrics (unit_id, run_id, label, model, suite, task, context_length, metric, value, stderr, "
            "n, higher_is_better, is_primary) SELECT ?, ?, ?, ?, suite, task, context_length, metric, value, stderr, "
            "n, higher_is_better, is_primary FROM metrics WHERE unit_id = ? ORDER BY rowid",
            (unit_id, run_id, label, model, source_id))
        self.db.execute("INSERT INTO samples (unit_id, idx, prompt_sha256, target, prediction, score, fields) "
                        "SELECT ?, idx, prompt_sha256, target, prediction, score, fields FROM samples "
                        "WHERE unit_id = ? ORDER BY rowid", (unit_id, source_id))

    def _insert_reuse(self, unit: dict, source_id: str, label: str, model: str) -> str:
        """A unit of ``unit['run_id']`` holding source_id's result; the caller holds the transaction."""
        source = self.db.execute("SELECT dataset_fingerprint, settings FROM units WHERE id = ?", (source_id,)).fetchone()
        unit_id = unit.get("id") or new_id()  # a merged unit keeps its id (merging it again adds nothing)
        self.db.execute(
            "INSERT INTO units (id, run_id, suite, task, context_length, unit_key, status, reason, started, finished, "
            f"dataset_fingerprint, settings, reused_from, seq) VALUES (?, ?, ?, ?, ?, ?, 'complete', NULL, ?, ?, ?, ?, "
            f"?, {NEXT_SEQ})",
            (unit_id, unit["run_id"], unit["suite"], unit["task"], unit["context_length"], unit["unit_key"],
             unit.get("started") or now(), now(), source[0], source[1], source_id))
        self._copy_result(source_id, unit_id, unit["run_id"], label, model)
        return unit_id

    def reuse_or_hold(self, unit: dict, label: str, model: str) -> Written | None:
        """When the key's result exists: this label's unit reusing it, or nothing if the label holds one already."""
        held = self._held_by_label(unit["unit_key"], label)
        if held:
            return Written(None, held[0])
        computed = self.computed_for_key(unit["unit_key"])
        if computed:
            return Written(self._insert_reuse(unit, computed[0], label, model), computed[0])
        return None

    @writes
    def begin_run(self, run: dict) -> str:
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now(), "status": "running"}
        with self.transaction():
            self.insert("runs", _run_row(run))
        return run["id"]

    @writes
    def finish_run(self, run_id: str, status: str) -> None:
        with self.transaction():
            self.db.execute("UPDATE runs SET finished = ?, status = ? WHERE id = ?", (now(), status, run_id))

    @writes
    def reuse_unit(self, unit: dict) -> Written:
        """The run's unit holding the result another run computed for its key (nothing if its label holds one);
        Written(None, None) when the key has no result (it must be computed)."""
        with self.transaction():
            label, model = self._run_names(unit["run_id"])
            return self.reuse_or_hold(unit, label, model) or Written(None, None)

    @writes
    def write_unit(self, unit: dict, metrics: list[dict], samples: list[dict], replace: bool = False) -> Written:
        """The unit, its metric rows and its samples, in one transaction. A store holds one computed result per
        unit key: when another process computed the key first, this run's unit reuses that result (or nothing is
        written, if its label holds the key already); ``replace`` (--force) replaces the computed result instead,
        and every other label's unit of the key then holds the new one."""
        with self.transaction():  # BEGIN IMMEDIATE: the check and the insert see no other writer between them
            label, model = self._run_names(unit["run_id"])
            if unit["status"] == "complete" and not replace and (kept := self.reuse_or_hold(unit, label, model)):
                return kept
            unit_id = unit.get("id") or new_id()
            others = self._drop_for_replace(unit["unit_key"], label, unit_id) if unit["status"] == "complete" else []
            self._insert_unit(unit_id, unit, metrics, samples)
            for other_id, run_id, other_label, other_model in others:  # the other labels now hold the new result
                self._copy_result(unit_id, other_id, run_id, other_label, other_model)
        return Written(unit_id)

    def _drop_for_replace(self, unit_key: str, label: str, new_unit: str) -> list[tuple[str, str, str, str]]:
        """Before a key's result is (re)computed as ``new_unit``: this label's units of it removed; every other
        label's unit of it, the one that computed the old result included, emptied and pointed at the new one (no
        label loses its cell to another's --force). Their (unit id, run id, label, model)."""
        rows = self.db.execute("SELECT u.id, u.run_id, r.label, r.model_spec FROM units u JOIN runs r ON "
                               "r.id = u.run_id WHERE u.unit_key = ? AND u.status = 'complete'", (unit_key,)).fetchall()
        self.db.executemany("DELETE FROM units WHERE id = ?", [(r[0],) for r in rows if r[2] == label])
        others = [tuple(r) for r in rows if r[2] != label]
        for other in others:
            self.db.execute("DELETE FROM metrics WHERE unit_id = ?", (other[0],))
            self.db.execute("DELETE FROM samples WHERE unit_id = ?", (other[0],))
            # before the new unit is inserted: the one computed result per key the index allows is the new one
            self.db.execute("UPDATE units SET reused_from = ? WHERE id = ?", (new_unit, other[0]))
        return others

    @writes
    def add_finished_run(self, run: dict, units: list[tuple[dict, list[dict], list[dict]]]) -> tuple[str, int, int]:
        """A run computed elsewhere (another tool's results), with its complete units, in one transaction:
        (run id, units added, units skipped because its label holds a result for their key already). A key another
        label holds is added as a reuse of that result."""
        run = {**run, "id": run.get("id") or new_id(), "started": run.get("started") or now()}
        run = {**run, "finished": run.get("finished") or run["started"], "status": run.get("status") or "complete"}
        added = skipped = 0
        with self.transaction():
            self.insert("runs", _run_row(run))
            for unit, metrics, samples in units:
                unit = {**unit, "run_id": run["id"]}
                kept = self.reuse_or_hold(unit, run["label"], run["model_spec"])
                if kept is None:
                    self._insert_unit(new_id(), unit, metrics, samples)
                added, skipped = (added + 1, skipped) if kept is None or kept.unit_id else (added, skipped + 1)
            if not added:  # everything was here already: leave no empty run behind
                self.db.execute("DELETE FROM runs WHERE id = ?", (run["id"],))
        return run["id"], added, skipped

    def _insert_unit(self, unit_id: str, unit: dict, metrics: list[dict], samples: list[dict]) -> None:
        """Rows of one unit; the caller holds the transaction."""
        self.db.execute(
            "INSERT INTO units (id, run_id, suite, task, context_length, unit_key, status, reason, started, "
            f"finished, dataset_fingerprint, settings, seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, {NEXT_SEQ})",
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
        """Deletes a run with its units. A result it computed that other labels' units reuse stays with them: the
        first of those written becomes the computed one (it holds a copy of the metrics and samples), the others reuse it,
        so no unit cites a deleted one."""
        with self.transaction():
            reused = [r[0] for r in self.db.execute(
                "SELECT DISTINCT u.id FROM units u JOIN units r ON r.reused_from = u.id WHERE u.run_id = ?", (run_id,))]
            deleted = self.db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount
            for unit_id in reused:
                row = self.db.execute("SELECT id FROM units WHERE reused_from = ? ORDER BY rowid LIMIT 1",
                                      (unit_id,)).fetchone()
                if row is None:
                    continue
                heir = row[0]
                self.db.execute("UPDATE units SET reused_from = NULL WHERE id = ?", (heir,))
                self.db.execute("UPDATE units SET reused_from = ? WHERE reused_from = ?", (heir, unit_id))
            return deleted
