"""The lm suite's driver: lm-eval's own zero-shot tasks, 0-shot, unchanged, with their data offline. lm-eval scores
them from the model's likelihoods in the same call: the driver overrides evaluate rather than the three stages."""

from __future__ import annotations

from ccq_eval.data.offline import offline
from ccq_eval.lm.harness import evaluate, without_samples
from ccq_eval.suites.driver import Driver
from ccq_eval.suites.lm.data import (FETCH_COMMAND, METRICS, PERPLEXITIES, LmDataError, cached, check_records,
                                     dataset_of, local_file, records_dataset, sha256, task_config, with_records)
from ccq_eval.suites.lm.protocol import WINDOW
from ccq_eval.suites.outcomes import Metric, UnitOutcome


class LmDriver(Driver):
    def check_inputs(self) -> None:
        inputs = self.inputs
        for task in inputs.tasks:  # a bad line fails here, before the model loads, not mid-run
            if (local := local_file(task, inputs.data_dir)) is not None:
                check_records(task, local)
        missing = [t for t in inputs.tasks if local_file(t, inputs.data_dir) is None and not cached(t)]
        if missing:
            names = ", ".join(f"{t} ({dataset_of(t)[0]})" for t in missing)
            raise LmDataError(f"zero-shot datasets not available offline: {names}; run `{FETCH_COMMAND}` on a machine "
                              "with network access, or put <task>.jsonl in --data-dir DIR/lm/")

    model_calls = "log-likelihoods"

    def max_length(self) -> int:
        return WINDOW

    def exercise(self, model, length: int, batch: int) -> None:
        from ccq_eval.generation.exercise import forward_without_cache

        forward_without_cache(model, length, batch)  # lm-eval scores a batch in one forward

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        local = local_file(task, self.inputs.data_dir)
        source = {"local": str(local), "sha256": sha256(local)} if local else {
            "hub": dataset_of(task)[0], "name": dataset_of(task)[1]}
        config = task_config(task)
        version = config.get("metadata", {}).get("version") or getattr(config.get("class"), "VERSION", None)
        settings = {"max_length": WINDOW, "num_fewshot": 0, "task_version": version,
                    "metrics": list(METRICS[task][0]), "primary": METRICS[task][1]}
        return settings, {"task": task, "source": source}

    def evaluate(self, unit, model) -> UnitOutcome | None:
        inputs = self.inputs
        local = local_file(unit.task, inputs.data_dir)
        # the same task, reading the records from the local file where there is one
        config = with_records(unit.task, records_dataset(local)) if local is not None else dict(task_config(unit.task))
        with offline():
            out = evaluate(model.lm, config, inputs.seed, WINDOW, limit=inputs.samples, num_fewshot=0,
                           bootstrap_iters=1000)
        if out is None:  # a data-parallel rank other than 0: its share is gathered by rank 0
            return None
        results = out["results"][unit.task]
        names, primary = METRICS[unit.task]
        n = len(out["samples"][unit.task])
        metrics = []
        for name in names:
            value, stderr = results[f"{name},none"], results.get(f"{name}_stderr,none")
            scale = 1.0 if name in PERPLEXITIES else 100.0
            stderr = stderr * scale if isinstance(stderr, (int, float)) else None
            metrics.append(Metric(name, value * scale, stderr=stderr, n=n, higher_is_better=name not in PERPLEXITIES,
                                  is_primary=name == primary))
        return UnitOutcome(status="complete", metrics=metrics, samples=[], settings={"n_samples": n},
                           fingerprint=sha256(local) if local else None, raw=without_samples(out))
