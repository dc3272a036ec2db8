"""What every command's parser shares: argparse's mistakes as one line and exit 2, range-checked numbers, the
--store flag and the default paths."""

from __future__ import annotations

import argparse

from ccq_eval.errors import BadInput

DEFAULT_STORE = "results/ccq.db"
DEFAULT_TABLES = "results/tables"
DEFAULT_FIGURES = "results/figures"
MAX_SAMPLES = 10_000_000  # more items per unit than any suite's data holds


class Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own mistakes get the same one-line form and exit code 2
        raise BadInput(f"{message} (see {self.prog} --help)")


def number(kind: type, low, high, what: str):
    """An argparse type: a finite number of ``kind`` in [low, high], refused at parse time (exit 2), not deep
    inside numpy or a model after the work has started."""
    def parse(text: str):
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not low <= value <= high:  # NaN fails both comparisons
            raise argparse.ArgumentTypeError(f"{text} is outside [{low}, {high}]: {what}")
        return value
    return parse


def catalogue_help(kind: str, default: str) -> "LaterHelp":
    """The help of `--table` / `--figure` (``kind``): the catalogue's names, each cross-suite one with what it shows,
    then ``default``; read when help is shown."""
    def make() -> str:
        from ccq_eval import catalogue

        listed = catalogue.table_help() if kind == "table" else catalogue.figure_help()
        return f"which {kind}: {listed}, {default}".replace("%", "%%")
    return LaterHelp(make)


class LaterHelp:
    """A help text argparse formats only when help is shown (``make`` builds it then): the catalogue's table and
    figure names import every suite's tables.py and figures.py, which no other command needs."""

    def __init__(self, make):
        self.make = make

    def __mod__(self, params) -> str:  # argparse expands a help text with `help % params`
        return self.make() % params

    def strip(self) -> str:
        return "later"  # argparse asks whether a help text is blank before expanding it

    def __bool__(self) -> bool:
        return True


def add_store(parser) -> None:
    parser.add_argument("--store", default=DEFAULT_STORE,
                        help=f"SQLite results store (default {DEFAULT_STORE}); raw lm-eval JSON goes to raw/ beside it")


def lengths_text(lengths) -> str:
    """(1024, 2048) -> '1k,2k' as --lengths takes them."""
    return ",".join(f"{L // 1024}k" if L % 1024 == 0 else str(L) for L in lengths)


def say_orphans(store) -> None:
    """One line on stderr when the store holds rows whose run is gone (a store edited by hand, foreign keys off):
    every read leaves them out."""
    import sys

    found = store.reads.orphans()
    if any(found.values()):
        print(f"ccq-eval: note: {found['units']} unit(s), {found['metrics']} metric row(s) and {found['samples']} "
              f"sample(s) belong to no run (the store was edited by hand) and are left out; `ccq-eval runs --check "
              f"--store {store.path}` lists them", file=sys.stderr)


def open_for_reading(path: str):
    """The store opened read-only, with one line on stderr for each kind of row its readers leave out: rows whose run
    is gone, and stored numbers that are not finite (no run stores one and ingest refuses them, but a hand-edited or
    foreign store may hold them)."""
    import sys

    from ccq_eval.store import Store
    from ccq_eval.text import visible

    store = Store(path, readonly=True)
    say_orphans(store)
    untrusted = store.reads.untrusted_metrics()
    if untrusted:
        label, suite, task, length, metric, value = untrusted[0]
        print(f"ccq-eval: note: {len(untrusted)} stored value(s) are not finite numbers and are left out of every table "
              f"and figure (first: {visible(repr(label))} {task} at {length} {metric} = {value})", file=sys.stderr)
    return store
