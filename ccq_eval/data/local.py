"""Where a suite's local data is looked for: DATA_DIR/<kind>/<name>.jsonl, then the fetched copy in
the cache; and the one-line message when some of it is found in neither."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.data.cache import cache_root


def candidates(kind: str, name: str, data_dir: str | None) -> list[Path]:
    return ([Path(data_dir) / kind / f"{name}.jsonl"] if data_dir else []) + [cache_root() / kind / f"{name}.jsonl"]


def find(kind: str, name: str, data_dir: str | None) -> Path | None:
    return next((p for p in candidates(kind, name, data_dir) if p.exists()), None)


def not_found(what: str, missing: list[str], kind: str, data_dir: str | None, layout: str, fetch: str) -> str:
    where = f"{data_dir}/{kind}/" if data_dir else f"--data-dir DIR/{kind}/"
    return (f"{what} not found offline: {', '.join(missing)}; put {layout} in {where}, or run `{fetch}` on a "
            "machine with network access")
