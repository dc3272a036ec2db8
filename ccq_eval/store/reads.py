"""The named reads: everything outside the store reads results through these (typed rows, or tidy frames
for the report), so no other module writes SQL."""

from __future__ import annotations

from ccq_eval.store.connection import Part
from ccq_eval.store.rows import MetricRow, RunBundle, RunRow, SampleRow, UnitBundle, UnitRow
from ccq_eval.store.schema import schema_columns

_RUNS_WITH_COUNTS = ("SELECT r.*, COUNT(u.id) AS units, COALESCE(SUM(u.status = 'complete'), 0) AS complete_units "
                     "FROM runs r LEFT JOIN units u ON u.run_id = r.id")


# rows whose parent is gone (a store edited by hand with foreign keys off, as the sqlite3 shell has them): no read
# below returns them; ``orphans`` counts them
_LIVE_UNITS = "SELECT u.id FROM units u JOIN runs r ON r.id = u.run_id"


def _in(values) -> str:
    return f"({', '.join('?' * len(values))})"


class Reads(Part):
    """The named reads of a store."""

    def runs(self) -> list[RunRow]:
        """Every run, oldest first, with how many units it stored and how many of them are complete."""
        return [RunRow.of(r) for r in self.query(f"{_RUNS_WITH_COUNTS} GROUP BY r.id ORDER BY r.started, r.rowid")]

    def run(self, run_id: str) -> RunRow | None:
        rows = self.query(f"{_RUNS_WITH_COUNTS} WHERE r.id = ? GROUP BY r.id", (run_id,))
        return RunRow.of(rows[0]) if rows else None

    def labels(self) -> list[str]:
        """Every run's label, sorted."""
        return sorted(r[0] for r in self.query("SELECT DISTINCT label FROM runs"))

    def units(self, run_id: str | None = None, status: str | None = None) -> list[UnitRow]:
        """Units in the order they were stored, of one run and / or one status."""
        where = [(c, v) for c, v in (("run_id", run_id), ("status", status)) if v is not None]
        clause = "".join(f" AND {c} = ?" for c, _ in where)
        return [UnitRow.of(r) for r in self.query(f"SELECT * FROM units WHERE run_id IN (SELECT id FROM runs){clause} "
                                                  "ORDER BY rowid", tuple(v for _, v in where))]

    def metrics(self, unit_id: str | None = None, tasks: tuple[str, ...] | None = None,
                primary_only: bool = False) -> list[MetricRow]:
        """Metric rows of one unit, or of every unit, narrowed to some tasks and / or the primary metric."""
        where, params = [f"unit_id IN ({_LIVE_UNITS})"], []
        if unit_id is not None:
            where.append("unit_id = ?")
            params.append(unit_id)
        if tasks is not None:
            where.append(f"task IN {_in(tasks)}")
            params += list(tasks)
        if primary_only:
            where.append("is_primary = 1")
        return [MetricRow.of(r) for r in self.query(f"SELECT * FROM metrics WHERE {' AND '.join(where)} ORDER BY rowid",
                                                    tuple(params))]

    def samples(self, unit_id: str) -> list[SampleRow]:
        return [SampleRow.of(r) for r in self.query("SELECT * FROM samples WHERE unit_id = ? ORDER BY idx", (unit_id,))]

    def run_bundle(self, run_id: str, status: str | None = "complete") -> RunBundle | None:
        """A run with its units (of ``status``; None: all), their metrics and samples; None for an unknown run."""
        run = self.run(run_id)
        if run is None:
            return None
        return RunBundle(run, [UnitBundle(u, self.metrics(u.id), self.samples(u.id))
                               for u in self.units(run_id, status)])

    def complete_unit_keys(self, label: str | None = None) -> set[str]:
        """The keys with a complete result (one computed result each); with ``label``: those that label holds."""
        if label is None:
            return {r[0] for r in self.query("SELECT u.unit_key FROM units u JOIN runs r ON r.id = u.run_id "
                                             "WHERE u.status = 'complete'")}
        return {r[0] for r in self.query("SELECT u.unit_key FROM units u JOIN runs r ON r.id = u.run_id "
                                         "WHERE u.status = 'complete' AND r.label = ?", (label,))}

    def primary_value(self, unit_id: str) -> float | None:
        """A unit's primary metric."""
        rows = self.query("SELECT value FROM metrics WHERE unit_id = ? AND is_primary = 1", (unit_id,))
        return rows[0][0] if rows else None

    def run_of_unit(self, unit_id: str) -> str | None:
        rows = self.query("SELECT run_id FROM units WHERE id = ?", (unit_id,))
        return rows[0][0] if rows else None

    def units_of_run(self, run_id: str) -> list[tuple[str, int, str]]:
        """(task, context length, status) of each unit a run stored, in the order it stored them."""
        return [(u.task, u.context_length, u.status) for u in self.units(run_id)]

    def orphans(self) -> dict[str, int]:
        """Rows whose run (or unit) is gone, which no read returns: {"units": n, "metrics": n, "samples": n}."""
        return {"units": self.query("SELECT COUNT(*) FROM units WHERE run_id NOT IN (SELECT id FROM runs)")[0][0],
                **{table: self.query(f"SELECT COUNT(*) FROM {table} WHERE unit_id NOT IN ({_LIVE_UNITS})")[0][0]
                   for table in ("metrics", "samples")}}

    def orphan_units(self) -> list[tuple[str, str, str, int, str]]:
        """(unit id, missing run id, task, length, status) of each unit whose run is gone."""
        return [tuple(r) for r in self.query("SELECT id, run_id, task, context_length, status FROM units WHERE run_id "
                                             "NOT IN (SELECT id FROM runs) ORDER BY rowid")]

    # --- frames for the report --------------------------------------------------------------------

    def metrics_frame(self):
        """Every metric row of a complete unit, with its unit's id, finish time and settings (JSON text)."""
        return self.frame(
            "SELECT m.label, m.model, m.suite, m.task, m.context_length, m.metric, m.value, m.stderr, m.n, "
            "m.higher_is_better, m.is_primary, u.id AS unit_id, u.finished, u.settings "
            "FROM metrics m JOIN units u ON u.id = m.unit_id JOIN runs r ON r.id = u.run_id WHERE u.status = 'complete'")

    def label_cells(self, label: str) -> dict[tuple[str, str, int], str]:
        """(suite, task, context_length) -> unit key of every complete unit a label holds."""
        return {(r[0], r[1], r[2]): r[3] for r in self.query(
            "SELECT u.suite, u.task, u.context_length, u.unit_key FROM units u JOIN runs r ON r.id = u.run_id "
            "WHERE u.status = 'complete' AND r.label = ?", (label,))}

    def untrusted_metrics(self) -> list[tuple]:
        """(label, suite, task, context_length, metric, value as stored) of complete units' metric rows whose value is
        not a finite number: text, or an infinity (SQLite stores NaN as NULL, which the schema refuses)."""
        return [tuple(r) for r in self.query(
            "SELECT m.label, m.suite, m.task, m.context_length, m.metric, CAST(m.value AS TEXT) FROM metrics m "
            "JOIN units u ON u.id = m.unit_id JOIN runs r ON r.id = u.run_id WHERE u.status = 'complete' AND (typeof(m.value) NOT IN "
            "('real', 'integer') OR m.value > 1.7976931348623157e308 OR m.value < -1.7976931348623157e308)")]

    def samples_frame(self, suite: str, columns: tuple[str, ...]):
        """Per-sample ``columns`` (of the samples table) of one suite's complete units, with the run's label, the
        unit's task, length, settings, finish time and id."""
        unknown = [c for c in columns if c not in schema_columns()["samples"]]
        if unknown:
            raise ValueError(f"samples have no column {unknown[0]!r}; columns: {', '.join(schema_columns()['samples'])}")
        picked = ", ".join(f"s.{c}" for c in columns)
        return self.frame(
            f"SELECT r.label, u.task, u.context_length, u.settings, u.finished, u.id AS unit_id, {picked} "
            "FROM samples s JOIN units u ON u.id = s.unit_id JOIN runs r ON r.id = u.run_id "
            "WHERE u.status = 'complete' AND u.suite = ?", (suite,))
