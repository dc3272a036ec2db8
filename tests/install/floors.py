"""The lower bound of every range in pyproject.toml as an exact requirement (``name==floor``): the oldest
environment the ranges admit, which `make test-install` builds and tests."""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[2] / "pyproject.toml"


def floors(pyproject: Path = PYPROJECT, extra: str | None = None) -> list[str]:
    """Every dependency (or those of one optional extra) at its lower bound."""
    project = tomllib.loads(pyproject.read_text())["project"]
    pinned = []
    for requirement in project["optional-dependencies"][extra] if extra else project["dependencies"]:
        match = re.fullmatch(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?\s*>=\s*([^,\s]+)(,.*)?", requirement)
        if match is None:
            raise ValueError(f"pyproject.toml: {requirement!r} has no lower bound (every dependency needs a tested floor)")
        pinned.append(f"{match.group(1)}{match.group(2) or ''}=={match.group(3)}")
    return pinned


if __name__ == "__main__":
    print("\n".join(floors(Path(sys.argv[1]) if len(sys.argv) > 1 else PYPROJECT)))
