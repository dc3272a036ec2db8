"""`ccq-eval rescore`: the stored predictions scored again by the current scorers, without a model.

For each cell's unit (report/results.py's rule: the unit the tables show) of a suite that scores its outputs, the
unit's records are read back from the data cache by their fingerprint, the model's outputs from its stored samples
(the prediction, and what the generate stage kept: Driver.generated_fields / generated_settings), and the suite's
score stage (suites/driver.py) runs on them. Each result is written as a new unit of a new run that copies the
source run's provenance and records ``rescored_from`` (the unit it came from) in its settings; nothing is replaced,
and the tables show the newest unit of each cell. A suite whose numbers are measurements (perplexity, cost) cannot
be re-scored and says why."""

from __future__ import annotations

import dataclasses
import shlex
from dataclasses import dataclass, field

from ccq_eval import __version__
from ccq_eval.errors import BadInput
from ccq_eval.run.units import metric_row
from ccq_eval.suites.base import Suite, parse_tasks
from ccq_eval.suites.driver import DriverInputs, Generated, UnitData
from ccq_eval.suites.outcomes import Unit, UnitOutcome


@dataclass
class Rescored:
    """What one rescore did: (label, task, length, metric, before, after) per unit written, and why each unit
    it could not rescore was left as it is."""

    written: list[tuple] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)
    not_rescorable: dict[str, str] = field(default_factory=dict)  # suite -> why (when not asked for by name)
    interrupted: KeyboardInterrupt | None = None  # Ctrl-C or SIGTERM (runner.Terminated) mid-way: runs marked so
    continued: int = 0  # cells an interrupted rescore by these scorers already wrote: a rerun goes on from them


def chosen_suites(suites: dict[str, Suite], name: str | None, tasks: str | None) -> dict[str, tuple[str, ...]]:
    """suite -> the tasks to rescore; a named suite that cannot be rescored is bad input (one line)."""
    if name is None:
        if tasks is not None:
            raise BadInput("--tasks needs --suite: name the suite the tasks belong to")
        return {n: s.all_tasks for n, s in suites.items()}
    if name not in suites:
        raise BadInput(f"--suite {name!r}: unknown; available: {', '.join(suites)}")
    suite = suites[name]
    if suite.not_rescorable:
        raise BadInput(f"--suite {name}: cannot be re-scored: {suite.not_rescorable}")
    return {name: parse_tasks(suite, tasks) if tasks is not None else suite.all_tasks}


def stored_outputs(driver, unit_row, samples) -> Generated:
    """The generate stage's outputs as the store kept them."""
    outputs = {s.idx: {"prediction": s.prediction or "",
                       **{k: (s.fields or {}).get(k) for k in driver.generated_fields}} for s in samples}
    settings = unit_row.settings if isinstance(unit_row.settings, dict) else {}
    return Generated(outputs, {k: settings[k] for k in driver.generated_settings if k in settings})


def score_again(suite: Suite, unit_row, samples, records: list[dict]) -> UnitOutcome:
    """The suite's score stage on a stored unit."""
    settings = unit_row.settings if isinstance(unit_row.settings, dict) else {}
    inputs = DriverInputs(suite, (unit_row.task,), (unit_row.context_length,), settings.get("samples"),
                          suite.parse_options({}), settings.get("seed", 0), None)
    driver = suite.driver(inputs)
    unit = Unit(unit_row.suite, unit_row.task, unit_row.context_length, settings, {}, unit_row.unit_key)
    return driver.score(unit, UnitData(records, unit_row.dataset_fingerprint), stored_outputs(driver, unit_row,
                                                                                            samples))


class Rescorer:
    """Rescores the chosen cells of one store, writing each source run's rescored units under a new run."""

    def __init__(self, store, suites: dict[str, Suite], command_line: str):
        from ccq_eval.data.cache import FrozenByContent
        from ccq_eval.report.results import Results

        from ccq_eval.run.runner import git_sha

        self.store, self.suites, self.command_line = store, suites, command_line
        self.rescored_by = {"ccq_eval": __version__, "git_sha": git_sha()}  # these scorers
        self.results = Results(store)  # the cells the tables show, each run and each unit's metric rows: read once
        self.new_runs: dict[str, str] = {}  # source run id -> the rescore's run id
        self.frozen = FrozenByContent()

    def source_run(self, run_id: str):
        return next(run for run in self.results.run_rows if run.id == run_id)

    def targets(self, chosen: dict[str, tuple[str, ...]], done: Rescored) -> list[tuple]:
        """(label, unit row) of every cell to rescore, in the tables' order; suites that cannot be rescored noted."""
        cells = self.results.cells
        found = []
        for cell, unit in cells.items():
            suite = self.suites.get(cell.suite)
            if (unknown := self.unknown(cell, suite, chosen)) is not None:
                done.left_out.append(f"{cell.label} {cell.task} at {cell.context_length}: {unknown}; left as it is")
                continue
            if suite is None or cell.task not in chosen.get(cell.suite, ()):
                continue
            if suite.not_rescorable:
                done.not_rescorable[suite.name] = suite.not_rescorable
                continue
            if self.written_by_interrupted_rescore(unit):
                done.continued += 1
                continue
            found.append((cell, unit))
        order = list(self.suites)
        found.sort(key=lambda item: (order.index(item[0].suite), self.suites[item[0].suite].task_order(item[0].task),
                                     item[0].context_length, item[0].label))
        return found

    def unknown(self, cell, suite, chosen: dict[str, tuple[str, ...]]) -> str | None:
        """Why a cell the rescore was asked to cover is one this ccq-eval cannot score (a newer version wrote it), or
        None; a cell outside what was asked for is not named."""
        if suite is None:
            return (f"suite {cell.suite!r} is not one this ccq-eval knows (written by a newer version?)"
                    if len(chosen) == len(self.suites) else None)
        if cell.task not in suite.all_tasks and chosen.get(cell.suite) == suite.all_tasks:
            return f"task {cell.task!r} is not one of {suite.name}'s in this ccq-eval (written by a newer version?)"
        return None

    def ingested(self, unit) -> bool:
        """A unit `ccq-eval ingest` read from lm-eval's results file (its run says so), not a run of ccq-eval's."""
        from ccq_eval.interchange.lm_eval_document import SOURCE

        settings = unit.settings if isinstance(unit.settings, dict) else {}
        return settings.get("source") == SOURCE or (self.source_run(unit.run_id).versions or {}).get("source") == SOURCE

    def written_by_interrupted_rescore(self, unit) -> bool:
        """A cell's unit that an interrupted rescore with these scorers wrote: the rerun of that command goes on
        from it rather than re-scoring it again."""
        if not isinstance(unit.settings, dict) or "rescored_from" not in unit.settings:
            return False
        run = self.source_run(unit.run_id)
        return run.status == "interrupted" and (run.versions or {}).get("rescored_by") == self.rescored_by

    def run_for(self, source_run_id: str) -> str:
        """The rescore's run for one source run: its provenance copied, this command and version recorded."""
        if source_run_id not in self.new_runs:
            source = self.source_run(source_run_id)
            versions = {**(source.versions or {}), "rescored_by": self.rescored_by}
            record = {f: getattr(source, f) for f in ("label", "model_spec", "weights_sha256", "model_config",
                                                       "ccq_overrides", "dtype", "device", "batch_size", "seeds")}
            self.new_runs[source_run_id] = self.store.writes.begin_run(
                {**record, "command_line": self.command_line, "versions": versions,
                 "git_sha": self.rescored_by["git_sha"]})
        return self.new_runs[source_run_id]

    def rescore_unit(self, cell, unit_row, done: Rescored) -> None:
        from ccq_eval.data.cache import cache_root, stable_hash
        from ccq_eval.run.runner import untrusted_number
        from ccq_eval.store import now
        from ccq_eval.store.writes import after

        suite = self.suites[cell.suite]
        where = f"{cell.label} {cell.task} at {cell.context_length}"
        records = self.frozen.records(suite.records_folder, unit_row.dataset_fingerprint)
        if records is None and self.ingested(unit_row):
            done.left_out.append(f"{where}: ingested from lm-eval's results, which hold its samples but not the "
                                 "frozen records rescore scores them against; nothing to re-score")
            return
        if records is None:
            done.left_out.append(f"{where}: its frozen records are not in the data cache ({cache_root()}); rerun "
                                 "that unit with `ccq-eval run --force` to score it")
            return
        samples = self.store.reads.samples(unit_row.id)
        if self.store.reads.run_of_unit(unit_row.id) is None:  # another process replaced the cell since it was read
            done.left_out.append(f"{where}: its unit was replaced while this rescore ran (another run wrote the "
                                 "cell); rescore again to score the new one")
            return
        try:
            outcome = score_again(suite, unit_row, samples, records)
        except (KeyError, TypeError, ValueError) as exc:  # stored samples that do not match their records
            done.left_out.append(f"{where}: its stored samples do not match its records ({type(exc).__name__}: {exc})")
            return
        if reason := untrusted_number(outcome):
            done.left_out.append(f"{where}: {reason}")
            return
        run_id = self.run_for(unit_row.run_id)
        source = self.source_run(unit_row.run_id)
        settings = {**(unit_row.settings or {}), **outcome.settings, "rescored_from": unit_row.id}
        record = {"run_id": run_id, "suite": cell.suite, "task": cell.task, "context_length": cell.context_length,
                  "unit_key": stable_hash({"rescore_of": unit_row.unit_key, "run": run_id}), "started": now(),
                  "finished": after(unit_row.finished),  # newer than its source, whatever the clocks say
                  "status": "complete", "reason": None, "dataset_fingerprint": unit_row.dataset_fingerprint,
                  "settings": settings}
        metrics = [metric_row(source.label, source.model_spec, m.name, m.value, stderr=m.stderr, n=m.n,
                              higher_is_better=m.higher_is_better, is_primary=m.is_primary) for m in outcome.metrics]
        self.store.writes.write_unit(record, metrics, [dataclasses.asdict(s) for s in outcome.samples])
        before = next((m.value for m in self.results.unit_metrics(unit_row.id) if m.is_primary), None)
        primary = next(m for m in outcome.metrics if m.is_primary)
        done.written.append((cell.label, cell.task, cell.context_length, primary.name, before, primary.value))


def rescore(store, suites: dict[str, Suite], suite: str | None = None, tasks: str | None = None,
            argv: list[str] = ()) -> Rescored:
    """Rescores the cells of ``suite`` (None: every suite that can be) narrowed to ``tasks``."""
    from ccq_eval.run.runner import interrupts

    chosen = chosen_suites(suites, suite, tasks)
    rescorer = Rescorer(store, suites, shlex.join(["ccq-eval", "rescore", *argv]))
    done = Rescored()
    try:
        with interrupts() as received:
            for cell, unit_row in rescorer.targets(chosen, done):
                rescorer.rescore_unit(cell, unit_row, done)
                received.raise_if_received()  # an interrupt a library swallowed mid-unit
    except KeyboardInterrupt as exc:  # each unit is written whole or not at all: the written ones stay
        done.interrupted = exc
    status = "complete" if done.interrupted is None else "interrupted"
    for run_id in rescorer.new_runs.values():
        store.writes.finish_run(run_id, status)
    return done
