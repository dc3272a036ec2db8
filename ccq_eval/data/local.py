"""Where a suite's local data is looked for: DATA_DIR/<kind>/<name>.jsonl (or .json, .jsonl.gz, .json.gz), then the
fetched copy in the cache; and the one-line message when some of it is found in neither."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from ccq_eval.data.cache import cache_root, load_frozen
from ccq_eval.errors import BadInput


class CacheAltered(BadInput):
    """A fetched file in the cache that no longer matches its sha256 sidecar."""


def candidates(kind: str, name: str, data_dir: str | None) -> list[Path]:
    """DATA_DIR/<kind>/<name> as JSON Lines, a JSON file or either gzipped (data/jsonl.py), then the cache's copy."""
    from ccq_eval.data.jsonl import SUFFIXES

    mine = [Path(data_dir) / kind / f"{name}{suffix}" for suffix in SUFFIXES] if data_dir else []
    return mine + [cache_root() / kind / f"{name}.jsonl"]


_VERIFIED: set[tuple[str, int, int]] = set()  # (path, size, mtime) of cached files whose sidecar matched


def _intact(path: Path) -> bool:
    """The file matches its sidecar; checked once per process for a given size and modification time
    (a run asks for the same corpus several times: hashing 25 MB each time is wasted)."""
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if key not in _VERIFIED:
        if load_frozen(path) is None:
            return False
        _VERIFIED.add(key)
    return True


class LocalFileError(BadInput):
    """A user's data file that cannot be the one meant: a broken symbolic link, or two files for one name."""


def _broken_link(path: Path) -> str | None:
    """Why a symbolic link leads nowhere (it loops, or its target is missing), or None."""
    if not path.is_symlink():
        return None
    try:
        path.stat()
    except OSError as exc:
        return "loops" if exc.errno == errno.ELOOP else f"points at {os.readlink(path)!r}, which does not exist"
    except RuntimeError:  # pathlib's own loop error on some Pythons
        return "loops"
    return None


def users_file(kind: str, name: str, data_dir: str | None) -> Path | None:
    """The one file DATA_DIR holds for ``name``: a broken link is named as one, and two spellings of one file (squad.jsonl
    beside squad.json) are refused, naming both."""
    mine = candidates(kind, name, data_dir)[:-1]
    for path in mine:
        if (why := _broken_link(path)) is not None:
            raise LocalFileError(f"{str(path)!r} is a symbolic link that {why}; point it at the file, or remove it")
    present = [path for path in mine if path.exists()]
    if len(present) > 1:
        raise LocalFileError(f"{kind} {name!r}: two files for it, {' and '.join(repr(str(p)) for p in present)}; keep "
                             "one (which to read would be a guess)")
    return present[0] if present else None


def find(kind: str, name: str, data_dir: str | None) -> Path | None:
    """The user's file in DATA_DIR, else the cache's copy if it exists; a cached copy is verified against its sidecar
    when it is read (again whenever the file changes)."""
    cached = candidates(kind, name, None)[-1]
    found = users_file(kind, name, data_dir) or (cached if cached.exists() else None)
    if found is not None and found == cached and not _intact(found):
        raise CacheAltered(f"cached {kind} file {str(found)!r} does not match its sha256 sidecar (edited or cut "
                           f"short); delete it and fetch it again (ccq-eval data fetch {kind})")
    return found


def require(names: list[str], found, error: type[BadInput], what: str, kind: str, data_dir: str | None, layout: str,
            fetch: str) -> None:
    """Raises ``error`` (one line: not_found's) naming every one of ``names`` that ``found(name, data_dir)`` (the
    suite's lookup) finds nowhere."""
    missing = [name for name in names if found(name, data_dir) is None]
    if missing:
        raise error(not_found(what, missing, kind, data_dir, layout, fetch))


def not_found(what: str, missing: list[str], kind: str, data_dir: str | None, layout: str, fetch: str) -> str:
    where = f"{data_dir}/{kind}/" if data_dir else f"--data-dir DIR/{kind}/"
    return (f"{what} not found offline: {', '.join(missing)}; put {layout} in {where}, or run `{fetch}` on a "
            "machine with network access")
