"""The LongBench suite's driver: data checks, unit settings (the length budget, the truncation
policy), and one lm-eval evaluation per unit (task x budget) through tasks/longbench. Records are
parsed once per run; each unit's prompts are built (middle-truncated) once and frozen in the cache,
and the plugin reads the frozen file."""

from __future__ import annotations

from ccq_eval.data.cache import load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.lm.harness import evaluate, plugin_config, with_records, without_samples
from ccq_eval.suites.longbench import data as longbench
from ccq_eval.suites.longbench.tasks import TASKS
from ccq_eval.suites.outcomes import (Metric, Sample, UnitOutcome, evaluate_each, logged_entries, mean_metric,
                                     prediction_counts)


class LongBenchDriver:
    def __init__(self, plan):
        self.plan = plan

    def key(self, task: str) -> str:
        return self.plan.suite.short(task)

    def check_inputs(self) -> None:
        plan = self.plan
        keys = [self.key(t) for t in plan.tasks]
        longbench.check_available(keys, plan.request.data_dir)
        self.records = {k: longbench.read_records(longbench.local_path(k, plan.request.data_dir)) for k in keys}
        self.records_hash = {k: stable_hash(records) for k, records in self.records.items()}
        for key in keys:
            for length in plan.lengths:
                if length <= TASKS[key].max_gen:
                    raise longbench.LongBenchError(f"--lengths {length}: no room for {key}'s prompt next to its "
                                                   f"{TASKS[key].max_gen} generated tokens")

    def max_length(self) -> int:
        return max(self.plan.lengths)

    def check_with_tokenizer(self) -> None:
        self.tokenizer_fp = tokenizer_fingerprint(self.plan.evaluand.tokenizer)

    def unit_settings(self, task: str, length: int) -> tuple[dict, dict]:
        spec = TASKS[self.key(task)]
        settings = {"max_gen_toks": spec.max_gen, "truncation": "middle (LongBench pred.py)",
                    "metric": spec.metric, "first_line": spec.first_line, "task_version": spec.version}
        data_key = {"records": self.records_hash[self.key(task)], "tokenizer": self.tokenizer_fp}
        return settings, data_key

    def run_units(self, units):
        return evaluate_each(units, self._evaluate)

    def _evaluate(self, unit) -> UnitOutcome:
        plan = self.plan
        key = self.key(unit.task)
        prompts_key = longbench.prompts_key(key, self.records_hash[key], self.tokenizer_fp, unit.context_length,
                                            plan.samples)
        frozen = longbench.prompts_path(prompts_key)
        docs, fingerprint, _ = load_or_build(frozen, prompts_key, lambda: longbench.build(
            key, self.records[key], plan.evaluand.tokenizer, unit.context_length, plan.samples)[0])
        out = evaluate(plan.evaluand.lm, with_records(plugin_config(unit.task), docs), plan.request.seed,
                       unit.context_length)
        if out is None:  # a data-parallel rank other than 0: its share is gathered by rank 0
            return None
        samples = []
        for entry, score in logged_entries(out, unit.task, len(docs)):
            doc = entry["doc"]
            prediction = entry["filtered_resps"][0]
            samples.append(Sample(doc["index"], score, target=doc["answers"][0] if doc["answers"] else "",
                                  prediction=prediction, prompt_sha256=stable_hash(doc["prompt"]),
                                  fields={"truncated_tokens": doc["truncated_tokens"],
                                          "prompt_tokens": doc["prompt_tokens"], "id": doc["id"],
                                          "empty_prediction": not prediction.strip()}))
        truncated = sum(1 for s in samples if s.fields["truncated_tokens"] > 0)
        extra = {**prediction_counts(samples), "truncated_prompts": truncated}
        metrics = [mean_metric("score", [s.score for s in samples], is_primary=True),
                   Metric("truncated_prompts", float(truncated), n=len(samples), higher_is_better=False)]
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=fingerprint,
                           settings=extra, raw=without_samples(out))
