"""The store, composed: one connection (connection.py) and the parts that use it, its named reads (reads.py), its
writes (writes.py) and its merging (ingest.py). Every other module holds a Store and calls the methods below; each
says which part answers."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.store.connection import Connection
from ccq_eval.store.ingest import Ingest
from ccq_eval.store.reads import Reads
from ccq_eval.store.rows import MetricRow, RunBundle, RunRow, SampleRow, UnitRow
from ccq_eval.store.writes import Writes, Written


class Store:
    """``Store(path)`` opens (creating if needed) a store; ``Store(path, readonly=True)`` only reads one."""

    def __init__(self, path: str | Path, readonly: bool = False):
        self.connection = Connection(path, readonly)
        self.reads = Reads(self.connection)
        self.writes = Writes(self.connection)
        self.merging = Ingest(self.connection, self.writes)

    # --- the connection ------------------------------------------------------------------------------
    @property
    def path(self) -> str:
        return self.connection.path

    @property
    def readonly(self) -> bool:
        return self.connection.readonly

    @property
    def db(self):
        return self.connection.db

    @property
    def version(self) -> int:
        return self.connection.version

    def transaction(self):
        return self.connection.transaction()

    def query(self, sql: str, params: tuple = ()):
        return self.connection.query(sql, params)

    def frame(self, sql: str, params: tuple = ()):
        return self.connection.frame(sql, params)

    def check_integrity(self) -> None:
        self.connection.check_integrity()

    def copy_to(self, path: str | Path) -> None:
        self.connection.copy_to(path)

    def close(self) -> None:
        self.connection.close()

    # --- the named reads -----------------------------------------------------------------------------
    def runs(self) -> list[RunRow]:
        return self.reads.runs()

    def run(self, run_id: str) -> RunRow | None:
        return self.reads.run(run_id)

    def labels(self) -> list[str]:
        return self.reads.labels()

    def units(self, run_id: str | None = None, status: str | None = None) -> list[UnitRow]:
        return self.reads.units(run_id, status)

    def metrics(self, unit_id: str | None = None, tasks: tuple[str, ...] | None = None,
                primary_only: bool = False) -> list[MetricRow]:
        return self.reads.metrics(unit_id, tasks, primary_only)

    def samples(self, unit_id: str) -> list[SampleRow]:
        return self.reads.samples(unit_id)

    def run_bundle(self, run_id: str, status: str | None = "complete") -> RunBundle | None:
        return self.reads.run_bundle(run_id, status)

    def complete_unit_keys(self, label: str | None = None) -> set[str]:
        return self.reads.complete_unit_keys(label)

    def primary_value(self, unit_id: str) -> float | None:
        return self.reads.primary_value(unit_id)

    def run_of_unit(self, unit_id: str) -> str | None:
        return self.reads.run_of_unit(unit_id)

    def units_of_run(self, run_id: str) -> list[tuple[str, int, str]]:
        return self.reads.units_of_run(run_id)

    def metrics_frame(self):
        return self.reads.metrics_frame()

    def label_cells(self, label: str) -> dict[tuple[str, str, int], str]:
        return self.reads.label_cells(label)

    def untrusted_metrics(self) -> list[tuple]:
        return self.reads.untrusted_metrics()

    def samples_frame(self, suite: str, columns: tuple[str, ...]):
        return self.reads.samples_frame(suite, columns)

    # --- the writes ----------------------------------------------------------------------------------
    def begin_run(self, run: dict) -> str:
        return self.writes.begin_run(run)

    def finish_run(self, run_id: str, status: str) -> None:
        self.writes.finish_run(run_id, status)

    def reuse_unit(self, unit: dict) -> Written:
        return self.writes.reuse_unit(unit)

    def write_unit(self, unit: dict, metrics: list[dict], samples: list[dict], replace: bool = False) -> Written:
        return self.writes.write_unit(unit, metrics, samples, replace)

    def add_finished_run(self, run: dict, units: list) -> tuple[str, int, int]:
        return self.writes.add_finished_run(run, units)

    def delete_run(self, run_id: str) -> int:
        return self.writes.delete_run(run_id)

    # --- merging -------------------------------------------------------------------------------------
    def ingest(self, other: "Store", known_task=None) -> tuple[int, int, int, list[str]]:
        return self.merging.ingest(other, known_task)
