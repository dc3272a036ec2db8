"""Tables and figures register themselves where they are written: ``@table(name)`` over a function of the results
snapshot (report/results.py), the table options shared by every table and its own keyword arguments, returning a report.table.Table (or a formats.Rendered, or None
when there is nothing to show); ``@figure(name)`` over a function of the snapshot returning a matplotlib Figure or
None. The catalogue (catalogue/) imports the modules that hold them; nothing else is needed to add one.
Importing this module loads nothing."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Entry:
    name: str  # `tables --table NAME` / `curves --figure NAME`, and the file's name
    build: Callable
    about: str = ""  # said beside the name in --help (the cross-suite ones: what they compare)
    takes: tuple[str, ...] = ()  # a table's own keyword arguments beyond the shared options (the lm table's average)


TABLES: dict[str, Entry] = {}
FIGURES: dict[str, Entry] = {}


def _register(into: dict, name: str, about: str, takes: tuple[str, ...] = ()) -> Callable:
    def register(build: Callable) -> Callable:
        if name in into and into[name].build.__qualname__ != build.__qualname__:
            raise ValueError(f"{name!r} is registered twice ({into[name].build.__module__} and {build.__module__})")
        into[name] = Entry(name, build, about, takes)
        return build
    return register


def table(name: str, about: str = "", takes: tuple[str, ...] = ()) -> Callable:
    """Registers ``build(results, options, **own)`` as the table ``name``; ``takes``: the names of its own keyword
    arguments (a flag of `ccq-eval tables` only it reads)."""
    return _register(TABLES, name, about, takes)


def figure(name: str, about: str = "") -> Callable:
    """Registers ``draw(results)`` as the figure ``name``."""
    return _register(FIGURES, name, about)
