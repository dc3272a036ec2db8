"""The recall suite's driver, in three stages: data (the records read once per run; each unit's documents cut to
its length and put in the task's prompt once, frozen in the cache), generate (the unit's prompts through the
model's engine: greedy, up to 48 tokens, stopped at the first newline), score (contains: any answer in the
prediction, a pure function of the records and the outputs: `ccq-eval rescore` reruns it)."""

from __future__ import annotations

import functools

from ccq_eval.data.cache import load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.driver import Driver, Generated, UnitData
from ccq_eval.suites.generating import Ask, generated_texts
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, mean_metric, prediction_counts
from ccq_eval.suites.recall import data as recall
from ccq_eval.suites.recall.scoring import contains
from ccq_eval.suites.recall.tasks import ANSWER_RESERVE, MAX_GEN, REFERENCE_COMMIT, TASK_VERSION, TASKS, UNTIL


class RecallDriver(Driver):
    @functools.cached_property
    def records(self) -> dict[str, list[dict]]:
        """Every chosen task's records, read and checked once (a function of the inputs)."""
        return recall.read_all(self.inputs.tasks, self.inputs.data_dir)

    def check_inputs(self) -> None:
        self.records  # noqa: B018 - missing or malformed records are bad input before the model loads
        for length in self.inputs.lengths:
            if length <= ANSWER_RESERVE:
                raise recall.RecallDataError(f"--lengths {length}: the cut keeps length - {ANSWER_RESERVE} tokens "
                                             "of each document; use a larger length")

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        spec = TASKS[task]
        settings = {"task_version": TASK_VERSION, "max_gen_toks": MAX_GEN, "until": UNTIL,
                    "cut": f"{length - ANSWER_RESERVE} tokens of the document, "
                           + (f"centred on the earliest of {', '.join(spec.answer_fields)}" if spec.centred_on_answer
                              else "from its start"),
                    "dataset": spec.dataset, "reference": f"HazyResearch/prefix-linear-attention@{REFERENCE_COMMIT}"}
        data_key = {"records": stable_hash(self.records[task]), "tokenizer": tokenizer_fingerprint(model.tokenizer)}
        return settings, data_key

    def data(self, unit, tokenizer) -> UnitData:
        key = recall.prompts_key(unit.task, unit.data_key["records"], unit.data_key["tokenizer"], unit.context_length,
                                 self.inputs.samples)
        docs, fingerprint, _ = load_or_build(recall.prompts_path(key), key, lambda: recall.build(
            unit.task, self.records[unit.task], tokenizer, unit.context_length, self.inputs.samples))
        return UnitData(docs, fingerprint)

    def generate(self, unit, data: UnitData, model) -> Generated | None:
        """The prompt is the cut document and its question, a few tokens past the cut's budget: the model's budget
        is the longest prompt plus the 48 tokens to generate, so no prompt is ever cut again."""
        budget = max(doc["prompt_tokens"] for doc in data.records) + MAX_GEN
        return generated_texts(model, [Ask(doc["index"], doc["prompt"], MAX_GEN, until=(UNTIL,))
                                       for doc in data.records], budget, {"generation_budget": budget})

    def score(self, unit, data: UnitData, generated: Generated) -> UnitOutcome:
        samples = []
        for doc in sorted(data.records, key=lambda d: d["index"]):
            prediction = generated.outputs[doc["index"]]["prediction"]
            samples.append(Sample(doc["index"], contains(prediction, doc["answers"]), target=doc["answers"][0],
                                  prediction=prediction, prompt_sha256=stable_hash(doc["prompt"]),
                                  fields={"record": doc["record"], "prompt_tokens": doc["prompt_tokens"],
                                          "document_tokens": doc["document_tokens"], "kept_tokens": doc["kept_tokens"],
                                          "answer_in_window": doc["answer_in_window"],
                                          "empty_prediction": not prediction.strip()}))
        cut_short = sum(1 for s in samples if s.fields["kept_tokens"] < s.fields["document_tokens"])
        metrics = [mean_metric("contains", [s.score for s in samples], is_primary=True),
                   Metric("documents_cut", float(cut_short), n=len(samples), higher_is_better=False)]
        extra = {**prediction_counts(samples), **generated.settings, "documents_cut": cut_short}
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=data.fingerprint,
                           settings=extra, raw=generated.raw)
