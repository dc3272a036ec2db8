"""The lower bound of every range in pyproject.toml as an exact requirement (``name==floor``): the oldest
environment the ranges admit, which `make test-install` builds and tests. Where the registry has no CPU build of a
floor (torch below 2.13), the oldest CPU build stands in for it; that floor is checked on a GPU (docs/install.md)."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"
OLDEST_CPU_BUILD = {"torch": "2.13.0"}  # the registry's oldest CPU wheel (older ones are CUDA builds of several GB)


def release(version: str) -> tuple[int, ...]:
    """'2.13.0' -> (2, 13, 0): enough to order the plain release numbers pyproject.toml's floors are."""
    return tuple(int(part) for part in re.findall(r"\d+", version))


def floors(pyproject: Path = PYPROJECT, extra: str | None = None) -> list[str]:
    """Every dependency (or those of one optional extra) at its lower bound."""
    project = tomllib.loads(pyproject.read_text())["project"]
    pinned = []
    for requirement in project["optional-dependencies"][extra] if extra else project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([^,\s]+)(,.*)?", requirement)
        if match is None:
            raise ValueError(f"pyproject.toml: {requirement!r} has no lower bound (every dependency needs a tested floor)")
        name, floor = match.group(1), match.group(3)
        if name in OLDEST_CPU_BUILD and release(floor) < release(OLDEST_CPU_BUILD[name]):
            floor = OLDEST_CPU_BUILD[name]
        pinned.append(f"{name}{match.group(2) or ''}=={floor}")
    return pinned


if __name__ == "__main__":
    print("\n".join(floors(Path(sys.argv[1]) if len(sys.argv) > 1 else PYPROJECT)))
