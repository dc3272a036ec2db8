"""lm-eval's own results for the lm table's tasks, as lm units: accuracies in percent (as the lm suite stores
them), perplexities as they are, lm-eval's provenance, a unit key from the weights, model args, task, its
hash and version and the samples evaluated (so the same file ingested twice adds nothing)."""

from __future__ import annotations

from ccq_eval.data.cache import stable_hash
from ccq_eval.interchange.lm_eval_document import SOURCE, Refused
from ccq_eval.suites.lm.data import METRICS, PERPLEXITIES
from ccq_eval.suites.lm.protocol import WINDOW


def _metric_rows(results, task: str, names, primary: str, n: int | None) -> list[dict]:
    rows = []
    for name in names:
        scale = 1.0 if name in PERPLEXITIES else 100.0
        value = results.finite(task, f"{name},none")
        stderr = results.finite(task, f"{name}_stderr,none")
        rows.append({"label": results.label, "model": results.run["model_spec"], "metric": name,
                     "value": value * scale, "stderr": None if stderr is None else stderr * scale, "n": n,
                     "higher_is_better": name not in PERPLEXITIES, "is_primary": name == primary})
    return rows


def lm_unit(task: str, results) -> tuple | str | None:
    """(unit, metric rows, sample rows) of one lm table task; why it is left out; None for another suite's task."""
    if task not in METRICS:
        return None
    names, primary = METRICS[task]
    missing = [n for n in names if f"{n},none" not in results.numbers(task)]
    if missing:
        return f"no {', '.join(missing)} with filter 'none'"
    entry, n = results.n_samples(task)
    rows = _metric_rows(results, task, names, primary, n)  # a number that is not finite: a damaged file
    if results.max_length is None or results.max_length < WINDOW:
        said = ("record no max_length" if results.max_length is None
                else f"ran the model with max_length {results.max_length}, below the lm suite's window of {WINDOW}")
        return Refused(f"{task}: the results {said}, so lm-eval may have cut its contexts; rerun through "
                       "`ccq-eval lm-eval` or ccq-eval's lm suite")
    data, run = results.data, results.run
    settings = {"num_fewshot": (data.get("n-shot") or {}).get(task), "metrics": list(names), "primary": primary,
                "task_version": run["versions"]["task_versions"].get(task), "n_samples": n,
                "limit": data["config"].get("limit"), "source": SOURCE,
                "task_hash": (data.get("task_hashes") or {}).get(task)}
    key = stable_hash({"source": SOURCE, "weights": run["weights_sha256"],
                       "model_args": run["model_config"].get("model_args"), "task": task, "settings": settings,
                       "samples": entry})
    unit = {"suite": "lm", "task": task, "context_length": results.max_length, "unit_key": key,
            "status": "complete", "started": run["started"], "finished": run["started"],
            "dataset_fingerprint": settings["task_hash"], "settings": settings}
    return unit, rows, results.samples(task, primary)
