"""Every table and figure by name: each suite's own (``Suite.table_builders`` / ``figure_drawers``, built in its
tables.py / figures.py) plus the cross-suite seeds and pairs tables, rendered through report/. The CLI (its
help lists included), the notebooks and the viewer call these. Importing this module loads no heavy library."""

from __future__ import annotations

from ccq_eval.suites import SUITES

SEEDS = "seeds"
PAIRS = "pairs"
# what the cross-suite tables show (the suites' own tables are named by their suites)
CROSS_SUITE = {SEEDS: "mean ± sd over NAME, NAME-s1, ...",
               PAIRS: "ccq-NAME and NAME+ccq<lambda> against NAME on the same samples, with paired tests"}


def _suite_tables() -> dict:
    return {name: suite for suite in SUITES.values() for name in suite.table_builders}


def _suite_figures() -> dict:
    return {name: suite for suite in SUITES.values() for name in suite.figure_drawers}


def table_names() -> tuple[str, ...]:
    """In the registry's order (the paper's), then the cross-suite seeds and pairs tables: `tables --table all`."""
    return (*_suite_tables(), *CROSS_SUITE)


def figure_names() -> tuple[str, ...]:
    return tuple(_suite_figures())


def render_table(store, table: str, **options) -> dict[str, str] | None:
    """{format: text} for every format (the files), or None when there is nothing to show (``options``: those
    of table_grid)."""
    rendered = table_grid(store, table, **options)
    return None if rendered is None else rendered.formats()


def table_grid(store, table: str, ci: bool = False, reference: bool = False, baseline: str | None = None,
               strict: bool = True, average: list[str] | None = None):
    """The table as report.formats.Rendered (its grid and CSV), or None when there is nothing to show. With
    strict=False a baseline missing from this table is skipped (tables --table all)."""
    from ccq_eval.report.frame import label_families, metrics_frame
    from ccq_eval.report.table import TableOptions, render

    if table not in table_names():
        raise ValueError(f"--table {table!r}: unknown; available: {', '.join(table_names())}")
    frame = metrics_frame(store)
    if table == SEEDS:
        from ccq_eval.report.seeds import render_seeds

        return None if frame.empty else render_seeds(frame)
    if table == PAIRS:
        from ccq_eval.report.pairs import render_pairs

        return render_pairs(store)
    options = TableOptions(ci=ci, reference=reference, baseline=baseline, strict=strict, average=average)
    return render(build_table(store, table, frame, options), options, label_families(store))


def build_table(store, table: str, frame=None, options=None):
    """One suite table's report.Table (what every format renders), from the store's metrics frame."""
    from ccq_eval.report.frame import metrics_frame
    from ccq_eval.report.table import TableOptions

    suite = _suite_tables()[table]
    frame = metrics_frame(store) if frame is None else frame
    return suite.table_builder(table)(suite, frame, store, options or TableOptions())


def table_frame(store, table: str, **options):
    """The measured numbers of one suite table as a DataFrame (labels x columns), for notebooks."""
    from ccq_eval.report.table import TableOptions

    return build_table(store, table, options=TableOptions(**options)).values


def draw_figure(store, name: str):
    """A matplotlib Figure, or None when the store has nothing to draw."""
    suite = _suite_figures()[name]
    return suite.figure_drawer(name)(suite, store)
