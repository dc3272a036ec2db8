"""lm-eval's own output of a unit (the lm suite, longppl's lm-eval engine: ``UnitOutcome.raw``), kept beside the store
as raw/<run id>/<task>-<length>.json; the generating suites have none (they call the model's engine themselves)."""

from __future__ import annotations

import json
from pathlib import Path

from ccq_eval.store import StoreWriteError
from ccq_eval.suites.base import SuiteError


def raw_folder(store: str) -> Path:
    """Where a store's raw output goes: raw/ beside it."""
    return Path(store).resolve().parent / "raw"


def check_raw_folder(store: str) -> None:
    """Bad input before any work: a file where the raw folder goes."""
    folder = raw_folder(store)
    if folder.exists() and not folder.is_dir():
        raise SuiteError(f"--store {store!r}: {str(folder)!r} beside it is a file, where raw lm-eval output goes; "
                         "move it aside or pass another --store")


def save_raw(store: str, run_id: str, task: str, length: int, raw: dict) -> None:
    folder = raw_folder(store) / run_id
    try:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{task}-{length}.json").write_text(json.dumps(raw, indent=1, default=str))
    except OSError as exc:
        raise StoreWriteError(f"raw output {str(folder)!r}: cannot write ({exc.strerror}); the unit was not "
                              "stored — free disk space or make the folder writable, then rerun to resume") from exc
