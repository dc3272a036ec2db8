"""Merging another store into this one (shards, other machines): ids already here are skipped, one complete
result per unit key is kept, and rows that fail checks.py are refused with the reason."""

from __future__ import annotations

from ccq_eval.store.checks import untrusted_run, untrusted_unit
from ccq_eval.store.connection import Part
from ccq_eval.store.writes import Writes, writes


class Ingest(Part):
    """Merging another store into a store, through its writes (one complete result per unit key)."""

    def __init__(self, connection, store_writes: Writes):
        super().__init__(connection)
        self.writes = store_writes

    @writes
    def ingest(self, other, known_task=None) -> tuple[int, int, int, list[str]]:
        """Copy other's runs and their units, metrics and samples: (runs added, units added, complete units
        skipped because their label holds a result for their key here already, refusals). Ingesting twice adds
        nothing. ``known_task(suite, task)``: whether this version's tables know the task (a unit of another, from a
        newer ccq-eval, is refused)."""
        added_runs = added_units = already_complete = 0
        refused = []
        with self.transaction():
            for run in map(dict, other.connection.query("SELECT * FROM runs")):
                if (why := untrusted_run(run)) is not None:
                    refused.append(f"run {run['id']} {why}")
                    continue
                here = self.db.execute("SELECT status FROM runs WHERE id = ?", (run["id"],)).fetchone()
                if here is None:
                    self.writes.insert("runs", run)
                    added_runs += 1
                elif here[0] == "running" and run["status"] != "running":  # merged while it ran: now it has ended
                    self.db.execute("UPDATE runs SET status = ?, finished = ? WHERE id = ?",
                                    (run["status"], run["finished"], run["id"]))
                for unit in map(dict, other.connection.query("SELECT * FROM units WHERE run_id = ? ORDER BY rowid", (run["id"],))):
                    unknown = known_task is not None and not known_task(unit["suite"], unit["task"])
                    outcome = (f"is of task {unit['task']!r}, which suite {unit['suite']!r} of this ccq-eval does not "
                               "know (a newer version's?); upgrade ccq-eval to merge it") if unknown else \
                        self._merge_unit(other, unit, run)
                    if outcome == "complete elsewhere":
                        already_complete += 1  # one computed result per unit key: the one here is kept
                    elif outcome == "added":
                        added_units += 1
                    elif outcome is not None:
                        refused.append(f"unit {unit['id']} ({unit['task']}@{unit['context_length']}) {outcome}")
        return added_runs, added_units, already_complete, refused

    def _merge_unit(self, other, unit: dict, run: dict) -> str | None:
        """'added', 'complete elsewhere', a refusal's reason, or None (this very unit is here already). A complete
        unit whose key this store has computed already becomes a reuse of that result under its run's label (or
        is skipped, if that label holds the key here)."""
        if self.db.execute("SELECT 1 FROM units WHERE id = ?", (unit["id"],)).fetchone():
            return None
        if (why := untrusted_unit(other, unit)) is not None:
            return why
        unit = {k: v for k, v in unit.items() if k != "reused_from"}  # what it reuses is decided here
        if unit["status"] == "complete" and self.writes.computed_for_key(unit["unit_key"]):
            kept = self.writes.reuse_or_hold(unit, run["label"], run["model_spec"])
            return "added" if kept.unit_id else "complete elsewhere"
        self.writes.insert("units", unit)
        for table in ("metrics", "samples"):
            for row in other.connection.query(f"SELECT * FROM {table} WHERE unit_id = ? ORDER BY rowid", (unit["id"],)):
                self.writes.insert(table, dict(row))
        return "added"
