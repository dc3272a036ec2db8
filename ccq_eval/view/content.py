"""Everything the report shows, from the results snapshot (report/results.py) and the catalogue: runs
and their failed units, every table (the same grids `ccq-eval tables` renders), every figure (as SVG), the
units with their samples, and the compare pairs. Plain data, ready to embed as JSON."""

from __future__ import annotations

import math
import re

from ccq_eval.catalogue import figure_names, table_grid, table_names
from ccq_eval.report.labels import pairs_of
from ccq_eval.view.compare import compare_entries, compared_pairs
from ccq_eval.view.figures import figure_svg
from ccq_eval.view.samples import FrozenPrompts, latest_units, suite_views, unit_entry


def plain(value):
    """JSON-safe: NaN becomes null, infinities the strings "inf" / "-inf" (JSON has neither), containers walked."""
    if isinstance(value, float):
        if math.isnan(value):
            return None
        return value if math.isfinite(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):  # numpy scalars
        return plain(value.item())
    return value


def run_entry(run, partial: dict[str, str]) -> dict:
    """A run as the runs page shows it; a shard of a job missing others shows as partial, with why."""
    versions = run.versions if isinstance(run.versions, dict) else {}
    machine = versions.get("machine") if isinstance(versions.get("machine"), dict) else {}
    threads = machine.get("threads") if isinstance(machine.get("threads"), dict) else {}
    return {"id": run.id, "label": run.label, "model": run.model_spec, "weights": run.weights_sha256,
            "commit": versions.get("checkpoint"), "dtype": run.dtype, "device": run.device,
            "threads": threads.get("torch"), "git": run.git_sha,
            "versions": {k: v for k, v in versions.items() if isinstance(v, str)},
            "command": run.command_line, "started": run.started, "finished": run.finished,
            "status": f"partial: {partial[run.id]}" if run.id in partial else run.status,
            "units": run.units, "complete": run.complete_units}


def failed_units(results, labels: dict[str, str]) -> list[dict]:
    return [{"label": labels.get(u.run_id, "?"), "suite": u.suite, "task": u.task, "length": u.context_length,
             "reason": u.reason, "finished": u.finished, "run": u.run_id} for u in results.failed_units()]


def caption_text(caption: str | None) -> str | None:
    """A caption as text: the tables' captions are written for LaTeX (``\\%``), the page shows them plain."""
    return re.sub(r"\\([%&_#$])", r"\1", caption) if caption else caption


def table_entries(results, baseline: str | None) -> list[dict]:
    """Every table of the registry that has a measured row, as `ccq-eval tables --ci --reference` renders it
    (and --baseline when given): the same grid, so every cell is the same text."""
    out = []
    for name in table_names():
        rendered = table_grid(results, name, ci=True, reference=True, baseline=baseline, strict=False)
        if rendered is None:
            continue
        grid = rendered.grid
        if all(grid.kind(label) == "reported" for label in grid.cells.index):
            continue  # reported rows alone: nothing of this store to show
        out.append({"name": name, "caption": caption_text(grid.caption), "columns": [str(c) for c in grid.cells.columns],
                    "rows": [{"label": str(label), "kind": grid.kind(label),
                              "cells": [str(v) for v in grid.cells.loc[label].tolist()],
                              "bold": [bool(v) for v in grid.bold.loc[label].tolist()]}
                             for label in grid.cells.index]})
    return out


def figure_entries(results) -> list[dict]:
    """Every figure the registry draws from this store: {"name", "svg"} (the SVG checked for anything active)."""
    out = []
    for name in figure_names():
        svg = figure_svg(results, name)
        if svg is not None:
            out.append({"name": name, "svg": svg})
    return out


def report_content(results, baseline: str | None = None, compare: list[tuple[str, str]] = (),
                   whole_prompts: bool = False) -> dict:
    """The report's data (figures apart, which go into the page as markup of their own)."""
    runs = results.run_rows
    labels = {run.id: run.label for run in runs}
    prompts = FrozenPrompts()
    units = [unit_entry(latest, results, prompts, whole_prompts) for latest in latest_units(results)]
    names = sorted(set(labels.values()))
    pairs = compared_pairs(names, compare)
    return plain({"schema": results.store.connection.version, "runs": [run_entry(r, results.partial_runs) for r in runs],
                  "failed": failed_units(results, labels),
                  "tables": table_entries(results, baseline), "units": units, "views": suite_views(),
                  "compare": compare_entries(results, units, pairs),
                  "pairs": [list(p) for p in pairs_of(names)]})
