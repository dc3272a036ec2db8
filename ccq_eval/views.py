"""Every table and figure by name: each suite's own (suites/<name>/tables.py) plus the cross-suite
seeds and pairs tables, rendered through report/. The CLI and the notebooks call these."""

from __future__ import annotations

from ccq_eval.report.frame import label_families, metrics_frame
from ccq_eval.report.table import TableOptions, render
from ccq_eval.store import Store
from ccq_eval.suites import SUITES

SEEDS = "seeds"
PAIRS = "pairs"


def _tables() -> dict:
    return {name: (suite, build) for suite in SUITES.values() for name, build in suite.tables().items()}


def _figures() -> dict:
    return {name: (suite, draw) for suite in SUITES.values() for name, draw in suite.figures().items()}


def table_names() -> tuple[str, ...]:
    """In the registry's order (the paper's), then the cross-suite seeds and pairs tables: `tables --table all`."""
    return (*_tables(), SEEDS, PAIRS)


def figure_names() -> tuple[str, ...]:
    return tuple(_figures())


def render_table(store: Store, table: str, ci: bool = False, reference: bool = False, baseline: str | None = None,
                 strict: bool = True, average: list[str] | None = None) -> dict[str, str] | None:
    """{format: text} for every format (the files), or None when there is nothing to show. With
    strict=False a baseline missing from this table is skipped (tables --table all)."""
    if table not in table_names():
        raise ValueError(f"--table {table!r}: unknown; available: {', '.join(table_names())}")
    frame = metrics_frame(store)
    if table == SEEDS:
        from ccq_eval.suites.seeds import render_seeds

        return None if frame.empty else render_seeds(frame)
    if table == PAIRS:
        from ccq_eval.suites.pairs import render_pairs

        return render_pairs(store)
    suite, build = _tables()[table]
    options = TableOptions(ci=ci, reference=reference, baseline=baseline, strict=strict, average=average)
    return render(build(suite, frame, store, options), options, label_families(store))


def table_frame(store: Store, table: str, **options):
    """The measured numbers of one suite table as a DataFrame (labels x columns), for notebooks."""
    suite, build = _tables()[table]
    return build(suite, metrics_frame(store), store, TableOptions(**options)).values


def draw_figure(store: Store, name: str):
    """A matplotlib Figure, or None when the store has nothing to draw."""
    suite, draw = _figures()[name]
    return draw(suite, store)
