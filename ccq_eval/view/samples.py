"""The sample pages' data: the latest complete unit of each (label, suite, task, length), as the tables count
them, with its metrics and its samples as rows of the columns its suite's SampleView names, and, where the
data cache still holds the unit's frozen prompts, the needle's sentence with some haystack around it."""

from __future__ import annotations

from dataclasses import dataclass

from ccq_eval.suites import SUITES

CONTEXT_CHARACTERS = 300  # haystack shown each side of the needle


@dataclass(frozen=True)
class LatestUnit:
    unit: object  # store.rows.UnitRow
    label: str


def latest_units(results) -> list[LatestUnit]:
    """The unit each table cell reads (results.cells), in the registry's suite order, then task and length."""
    order = {name: i for i, name in enumerate(SUITES)}

    def place(cell):
        suite = SUITES.get(cell.suite)
        return (order.get(cell.suite, len(order)), suite.task_order(cell.task) if suite else 0, cell.task,
                cell.context_length, cell.label)

    return [LatestUnit(results.cells[cell], cell.label) for cell in sorted(results.cells, key=place)]


def view_columns(view) -> list[str]:
    """The headings of a suite's sample rows: index, target, prediction, score, then its fields."""
    return ["#", *([view.target] if view.target else []), *(["prediction"] if view.prediction else []), view.score,
            *(heading for heading, _ in view.fields)]


def _field(fields: dict, keys: tuple[str, ...]):
    for key in keys:
        if key in fields:
            return fields[key]
    return None


def sample_rows(view, samples) -> list[list]:
    """One row per sample, in the order of view_columns."""
    rows = []
    for sample in samples:
        fields = sample.fields if isinstance(sample.fields, dict) else {}
        rows.append([sample.idx, *([sample.target] if view.target else []),
                     *([sample.prediction] if view.prediction else []), sample.score,
                     *(_field(fields, keys) for _, keys in view.fields)])
    return rows


class FrozenPrompts:
    """A unit's frozen prompt records by sample index, found in the data cache by the unit's dataset fingerprint
    (data/cache.py's FrozenByContent); none where the cache no longer holds them unchanged (no context shown)."""

    def __init__(self):
        from ccq_eval.data.cache import FrozenByContent

        self._frozen = FrozenByContent()  # labels share their frozen prompts: each read once

    def records(self, folder: str, fingerprint: str | None) -> dict[int, dict]:
        records = self._frozen.records(folder, fingerprint) or []
        return {r["index"]: r for r in records if isinstance(r.get("index"), int)}


def unit_entry(latest: LatestUnit, results, prompts: FrozenPrompts, whole_prompts: bool) -> dict:
    """What the page holds of one unit: identity, metrics, and (for a suite with a SampleView) its samples."""
    unit = latest.unit
    suite = SUITES.get(unit.suite)
    entry = {"id": unit.id, "label": latest.label, "suite": unit.suite, "task": unit.task,
             "length": unit.context_length, "finished": unit.finished, "reused_from": unit.reused_from,
             "display": suite.display.get(unit.task, unit.task) if suite else unit.task,
             "metrics": [[m.metric, m.value, m.stderr, m.n, m.is_primary] for m in results.unit_metrics(unit.id)]}
    view = suite.sample_view if suite else None
    if view is None:
        return entry
    samples = results.unit_samples(unit.id)
    entry["rows"] = sample_rows(view, samples)
    entry["prompts"] = [s.prompt_sha256 for s in samples]
    if view.context is not None and suite.records_folder:
        records = prompts.records(suite.records_folder, unit.dataset_fingerprint)
        contexts = []
        for sample in samples:
            record = records.get(sample.idx)
            context = view.context(record, CONTEXT_CHARACTERS) if record is not None else None
            if context is not None and whole_prompts:
                context = {**context, "prompt": record.get(view.prompt_field)}
            contexts.append(context)
        if any(c is not None for c in contexts):
            entry["context"] = contexts
    return entry


def suite_views() -> dict:
    """suite -> how its sample rows read (headings, graded, the depth column)."""
    out = {}
    for name, suite in SUITES.items():
        view = suite.sample_view
        if view is None:
            continue
        columns = view_columns(view)
        out[name] = {"columns": columns, "graded": view.graded, "score": columns.index(view.score),
                     "depth": columns.index(view.depth) if view.depth else None,
                     "prediction": columns.index("prediction") if view.prediction else None,
                     "target": columns.index(view.target) if view.target else None}
    return out

