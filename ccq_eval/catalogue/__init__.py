"""Every table and figure by name, above the suites: each suite's own (registered with ``@table`` / ``@figure`` in
its tables.py / figures.py) and the cross-suite ones here (ruler: RULER's tasks beside S-NIAH and the multi-needle
tasks; recall: the recall suite's and the lm suite's recall tasks; recall-state, seeds, pairs), in the registry's
suite order. Each is a function of one results snapshot (report/results.py), read once per command. The CLI (its help
lists included), the notebooks and the viewer call these."""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil

from ccq_eval.report.entries import FIGURES, TABLES
from ccq_eval.suites import SUITES

# the cross-suite modules' order in the lists (after the suites' own); any other module here comes after them
CROSS_SUITE_ORDER = ("ruler", "recall", "recall_state", "recall_state_figure", "seeds", "pairs")


def _import_if_present(module: str) -> None:
    try:
        found = importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        found = False
    if found:
        importlib.import_module(module)


def load() -> None:
    """Imports every module that registers an entry (a module is imported once; registering is idempotent)."""
    for suite in SUITES.values():
        package = type(suite).__module__
        for part in ("tables", "figures"):
            _import_if_present(f"{package}.{part}")
    for module in pkgutil.iter_modules(__path__):  # every module of this package: a new one needs no line here
        importlib.import_module(f"{__name__}.{module.name}")


def _place(entry, packages: list[str]) -> tuple[int, str]:
    """Where an entry is listed: its suite's place in the registry, else after every suite in CROSS_SUITE_ORDER."""
    module = entry.build.__module__
    owner = [i for i, p in enumerate(packages) if module.startswith(p + ".")]
    if owner:
        return owner[0], ""
    name = module.rsplit(".", 1)[-1]
    rank = CROSS_SUITE_ORDER.index(name) if name in CROSS_SUITE_ORDER else len(CROSS_SUITE_ORDER)
    return len(packages) + rank, name


def _ordered(entries: dict) -> list:
    """Entries in the registry's suite order (a suite's own in the order its module defines them: the sort is
    stable), then the cross-suite ones."""
    load()
    packages = [type(suite).__module__ for suite in SUITES.values()]
    return sorted((e for e in entries.values() if _shown(e, packages)), key=lambda e: _place(e, packages))


def _shown(entry, packages: list[str]) -> bool:
    """An entry written in a suite's package counts while that suite is registered; any other always does."""
    module = entry.build.__module__
    return not module.startswith("ccq_eval.suites.") or any(module.startswith(p + ".") for p in packages)


def table_names() -> tuple[str, ...]:
    """`tables --table all`, in order."""
    return tuple(e.name for e in _ordered(TABLES))


def figure_names() -> tuple[str, ...]:
    return tuple(e.name for e in _ordered(FIGURES))


def described(names: tuple[str, ...], entries: dict) -> list[str]:
    """Names as --help lists them: a cross-suite entry with what it shows."""
    return [f"{n} ({entries[n].about})" if entries[n].about else n for n in names]


def table_help() -> str:
    return ", ".join(described(table_names(), TABLES))


def figure_help() -> str:
    return ", ".join(described(figure_names(), FIGURES))


def tables_taking(argument: str) -> list[str]:
    """The tables that take ``argument`` of their own (``@table(takes=...)``)."""
    return [name for name in table_names() if argument in TABLES[name].takes]


def _table_entry(table: str, own: dict):
    """The registered table, its own arguments checked: one it does not take is refused, naming those that do."""
    if table not in table_names():
        raise ValueError(f"--table {table!r}: unknown; available: {', '.join(table_names())}")
    for argument in own:
        if argument not in TABLES[table].takes:
            raise ValueError(f"--{argument}: the {table} table does not take it; it is for the "
                             f"{', '.join(tables_taking(argument)) or 'no'} table")
    return TABLES[table]


def table_grid(source, table: str, ci: bool = False, reference: bool = False, baseline: str | None = None,
               strict: bool = True, **own):
    """The table as report.formats.Rendered (its grid and CSV), or None when there is nothing to show (``source``: a
    Results or a Store). With strict=False a baseline missing from this table is skipped (tables --table all).
    ``own``: the table's own arguments (the lm table's ``average``)."""
    from ccq_eval.report.formats import Rendered
    from ccq_eval.report.results import results_of
    from ccq_eval.report.table import TableOptions, render

    entry = _table_entry(table, own)
    results = results_of(source)
    options = TableOptions(ci=ci, reference=reference, baseline=baseline, strict=strict)
    built = entry.build(results, options, **own)
    if built is None or isinstance(built, Rendered):
        return built
    return render(built, options, results.families(), results.partial_labels())


def render_table(source, table: str, **options) -> dict[str, str] | None:
    """{format: text} for every format (the files), or None when there is nothing to show."""
    rendered = table_grid(source, table, **options)
    return None if rendered is None else rendered.formats()


def table_frame(source, table: str, **options):
    """The measured numbers of one table as a DataFrame (labels x columns), for notebooks."""
    from dataclasses import fields

    from ccq_eval.report.results import results_of
    from ccq_eval.report.table import TableOptions

    shared = {f.name for f in fields(TableOptions)}
    own = {k: v for k, v in options.items() if k not in shared}
    entry = _table_entry(table, own)
    return entry.build(results_of(source), TableOptions(**{k: v for k, v in options.items() if k in shared}), **own).values


def draw_figure(source, name: str):
    """A matplotlib Figure, or None when there is nothing to draw."""
    from ccq_eval.report.results import results_of

    if name not in figure_names():
        raise ValueError(f"--figure {name!r}: unknown; available: {', '.join(figure_names())}")
    return FIGURES[name].build(results_of(source))
