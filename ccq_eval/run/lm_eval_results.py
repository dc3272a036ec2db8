"""lm-eval's results files into the store: ``results_<date>.json`` (``--output_path``), with the
``samples_<task>_<date>.jsonl`` beside it when lm-eval ran with ``--log_samples``.

Each task is offered to the suites (``Suite.lm_eval_units``): the one whose task it is turns it into a complete
unit with lm-eval's numbers and provenance, or says why it is left out; a task no suite reads is named and left
out. Everything is read and checked before the store is touched (lm_eval_document.py).
"""

from __future__ import annotations

from pathlib import Path

from ccq_eval.interchange.lm_eval_document import LmEvalResultsError, Refused, read_document
from ccq_eval.suites import SUITES


def is_results_file(path: Path) -> bool:
    return path.suffix == ".json" and path.is_file()


def read_results(path: Path, label: str | None = None) -> tuple[dict, list[tuple], list[str], list[str]]:
    """(run record, [(unit, metric rows, sample rows)], tasks left out with why, results refused with why) from one
    results file. Refused: a result that cannot be trusted (its prompts cut, a value its metric cannot take)."""
    results = read_document(path, label)
    units, left_out, refused = [], [], []
    for task in results.tasks:
        read = next((r for r in (s.lm_eval_units(task, results) for s in SUITES.values()) if r is not None), None)
        if read is None:
            left_out.append(f"{task} (not a task of any ccq-eval table)")
        elif isinstance(read, Refused):
            refused.append(read)
        elif isinstance(read, str):
            left_out.append(f"{task} ({read})")
        else:
            units += [r for r in read if not isinstance(r, Refused)]
            refused += [r for r in read if isinstance(r, Refused)]
    return results.run, units, left_out, refused


def results_files(path: Path) -> list[Path]:
    """A results file, or every results_*.json under a folder lm-eval wrote into."""
    if path.is_dir():
        found = sorted(path.rglob("results_*.json"))
        if not found:
            raise LmEvalResultsError(f"{path}: no results_*.json under it; pass lm-eval's --output_path folder or a "
                                     "results file")
        return found
    return [path]


def is_lm_eval_output(path: str) -> bool:
    """A results file, or a folder lm-eval wrote results into (not a store)."""
    folder = Path(path)
    return is_results_file(folder) or (folder.is_dir() and any(folder.rglob("results_*.json")))
