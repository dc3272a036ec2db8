"""The LongBench suite's driver, in three stages: data (the records parsed once per run; each unit's prompts built,
middle-truncated, once and frozen in the cache), generate (the unit's prompts through the model's
engine: greedy, pred.py's budget), score (LongBench's metric of each prediction, a pure function of the records and the outputs:
`ccq-eval rescore` reruns it)."""

from __future__ import annotations

import functools

from ccq_eval.data.cache import load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.driver import Driver, Generated, UnitData
from ccq_eval.suites.generating import Ask, generated_texts
from ccq_eval.suites.longbench import data as longbench
from ccq_eval.suites.longbench.scoring import score as longbench_score
from ccq_eval.suites.longbench.tasks import TASKS, eos_strings
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, mean_metric, prediction_counts


class LongBenchDriver(Driver):
    def key(self, task: str) -> str:
        return self.inputs.suite.short(task)

    @functools.cached_property
    def records(self) -> dict[str, list[dict]]:
        """LongBench's records of every chosen task, parsed once (a function of the inputs)."""
        keys = [self.key(t) for t in self.inputs.tasks]
        longbench.check_available(keys, self.inputs.data_dir)
        return {k: longbench.read_records(longbench.local_path(k, self.inputs.data_dir)) for k in keys}

    @functools.cached_property
    def records_hash(self) -> dict[str, str]:
        return {k: stable_hash(records) for k, records in self.records.items()}

    def check_inputs(self) -> None:
        self.records  # noqa: B018 - missing or malformed records are bad input before the model loads
        for key in self.records:
            for length in self.inputs.lengths:
                if length <= TASKS[key].max_gen:
                    raise longbench.LongBenchError(f"--lengths {length}: no room for {key}'s prompt next to its "
                                                   f"{TASKS[key].max_gen} generated tokens")

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        spec = TASKS[self.key(task)]
        settings = {"max_gen_toks": spec.max_gen, "truncation": "middle (LongBench pred.py)",
                    "metric": spec.metric, "first_line": spec.first_line, "task_version": spec.version}
        data_key = {"records": self.records_hash[self.key(task)], "tokenizer": tokenizer_fingerprint(model.tokenizer)}
        return settings, data_key

    def data(self, unit, tokenizer) -> UnitData:
        key = self.key(unit.task)
        prompts_key = longbench.prompts_key(key, self.records_hash[key], unit.data_key["tokenizer"],
                                            unit.context_length, self.inputs.samples)
        docs, fingerprint, _ = load_or_build(longbench.prompts_path(prompts_key), prompts_key, lambda: longbench.build(
            key, self.records[key], tokenizer, unit.context_length, self.inputs.samples)[0])
        return UnitData(docs, fingerprint)

    def generate(self, unit, data: UnitData, model) -> Generated | None:
        spec = TASKS[self.key(unit.task)]
        return generated_texts(model, [Ask(doc["index"], doc["prompt"], spec.max_gen, eos_strings=eos_strings(spec))
                                       for doc in data.records], unit.context_length)

    def score(self, unit, data: UnitData, generated: Generated) -> UnitOutcome:
        """LongBench's metric of each prediction (its eval.py, as tasks/longbench's process_results scores it)."""
        samples = []
        for doc in sorted(data.records, key=lambda d: d["index"]):
            prediction = generated.outputs[doc["index"]]["prediction"]
            samples.append(Sample(doc["index"], longbench_score(doc["task"], prediction, doc["answers"],
                                                                doc["all_classes"]),
                                  target=doc["answers"][0] if doc["answers"] else "", prediction=prediction,
                                  prompt_sha256=stable_hash(doc["prompt"]),
                                  fields={"truncated_tokens": doc["truncated_tokens"],
                                          "prompt_tokens": doc["prompt_tokens"], "id": doc["id"],
                                          "empty_prediction": not prediction.strip()}))
        truncated = sum(1 for s in samples if s.fields["truncated_tokens"] > 0)
        extra = {**prediction_counts(samples), "truncated_prompts": truncated}
        metrics = [mean_metric("score", [s.score for s in samples], is_primary=True),
                   Metric("truncated_prompts", float(truncated), n=len(samples), higher_is_better=False)]
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=data.fingerprint,
                           settings=extra, raw=generated.raw)
