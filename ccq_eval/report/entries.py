"""Tables and figures register themselves where they are written: ``@table(name)`` over a function of the results
snapshot (report/results.py) and the table options, returning a report.table.Table (or a formats.Rendered, or None
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


TABLES: dict[str, Entry] = {}
FIGURES: dict[str, Entry] = {}


def _register(into: dict, name: str, about: str) -> Callable:
    def register(build: Callable) -> Callable:
        if name in into and into[name].build.__qualname__ != build.__qualname__:
            raise ValueError(f"{name!r} is registered twice ({into[name].build.__module__} and {build.__module__})")
        into[name] = Entry(name, build, about)
        return build
    return register


def table(name: str, about: str = "") -> Callable:
    """Registers ``build(results, options)`` as the table ``name``."""
    return _register(TABLES, name, about)


def figure(name: str, about: str = "") -> Callable:
    """Registers ``draw(results)`` as the figure ``name``."""
    return _register(FIGURES, name, about)
