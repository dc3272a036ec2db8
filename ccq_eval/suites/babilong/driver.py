"""The BABILong suite's driver, in three stages: data (each unit's samples built at its length in the model's tokens
from the task's bAbI stories and the haystack, frozen in the cache), generate (the prompts through the model's engine,
greedy, the reference's 20 tokens, a row stopped once its first sentence is complete: the score reads nothing after
it), score (the reference's compare_answers, a pure function of the records and the outputs: `ccq-eval rescore`
reruns it)."""

from __future__ import annotations

import functools

from ccq_eval.data.cache import load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.babilong import NO_HAYSTACK_TASKS
from ccq_eval.suites.babilong import data as babilong
from ccq_eval.suites.babilong import published
from ccq_eval.suites.babilong.babi import BabiError
from ccq_eval.suites.babilong.noise import OUTPUT_TOKENS
from ccq_eval.suites.babilong.scoring import correct
from ccq_eval.suites.driver import Driver, Generated, UnitData
from ccq_eval.suites.generating import Ask, generated_texts
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, mean_metric, prediction_counts

REFERENCE = "booydar/babilong@7a6efee29f5cac03c3c410e6799c80fd2ffe3610"
SOURCE = "generated at the model's lengths"  # a published split's units say "published split <name>"


def first_sentence_done(text: str) -> bool:
    """The score reads the output up to its first full stop: once one is out, no later token changes it."""
    return "." in text


def qa(task: str) -> str:
    return task.removeprefix("babilong_")


def statements_budget(records: list[dict]) -> int:
    """A length-0 unit's budget: its longest prompt and the tokens to generate (nothing there can be cut)."""
    return max(r["prompt_tokens"] for r in records) + OUTPUT_TOKENS


class BabilongDriver(Driver):
    @functools.cached_property
    def stories(self) -> dict[str, babilong.Stories]:
        return {task: babilong.stories(task, self.inputs.data_dir) for task in self.inputs.tasks}

    @functools.cached_property
    def background(self) -> babilong.Background:
        return babilong.background(self.inputs.options["haystack"], self.inputs.data_dir)

    @property
    def prompt(self) -> str:
        return self.inputs.options["babilong-prompt"]

    @property
    def published(self) -> bool:
        return self.inputs.options["babilong-source"] == "published"

    @functools.cached_property
    def splits(self) -> dict[tuple[str, int], tuple[list[dict], str]]:
        """(task, length) -> the published split's records and their content hash, read and checked once."""
        return {(task, length): published.records(task, published.split_of(length), self.inputs.data_dir)
                for task in self.inputs.tasks for length in self.inputs.lengths}

    def check_inputs(self) -> None:
        # a malformed bAbI file, haystack or split, or a split not at hand, is bad input before the model loads
        haystacked = [task for task in self.inputs.tasks if task in NO_HAYSTACK_TASKS]
        if haystacked and any(self.inputs.lengths):
            raise BabiError(f"--tasks {qa(haystacked[0])}: qa6-qa20 run at --lengths 0 only (their statements alone, "
                            "as the reference publishes them); run them apart from qa1-qa5's lengths")
        if self.published:
            self.splits  # noqa: B018
        else:
            self.stories, self.background  # noqa: B018

    def check_with_tokenizer(self, tokenizer) -> None:
        if self.published:  # its prompts are as published: one that does not fit its length fails its unit
            return
        for task in self.inputs.tasks:
            smallest = babilong.smallest_length(qa(task), self.stories[task], tokenizer, self.inputs.samples,
                                                self.inputs.seed, self.prompt)
            for length in self.inputs.lengths:
                if 0 < length < smallest:  # 0: the statements alone, whatever they need
                    raise BabiError(f"--lengths {length}: every {task} prompt with its statements and the "
                                    f"{OUTPUT_TOKENS} tokens to generate needs {smallest} tokens; use larger lengths")

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        if self.published:
            return self._published_settings(task, length, model)
        read = self.stories[task]
        ground = self.background if length else None  # 0: no haystack, so none is named or keyed
        settings = {"max_gen_toks": OUTPUT_TOKENS, "prompt": self.prompt, "source": SOURCE,
                    "stories": {"source": read.source, "sha256": read.fingerprint},
                    **({"haystack": {"name": ground.name, "sha256": ground.fingerprint}} if ground else {}),
                    "reference": REFERENCE}
        key = babilong.dataset_key(task, read, ground, tokenizer_fingerprint(model.tokenizer), length,
                                   self.inputs.samples, self.inputs.seed, self.prompt)
        return settings, key

    def _published_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        """A published split's unit: its split and records' hash stand where a generated one names its haystack, so
        the table's columns never put the two together."""
        split, (_, digest) = published.split_of(length), self.splits[(task, length)]
        settings = {"max_gen_toks": OUTPUT_TOKENS, "prompt": self.prompt, "source": f"published split {split}",
                    "split": {"repo": published.REPO, "name": split, "sha256": digest},
                    "haystack": {"name": f"published {split}", "sha256": digest}, "reference": REFERENCE}
        key = {"generator": "babilong-published", "version": babilong.DATA_VERSION, "task": task, "split": split,
               "records": digest, "tokenizer": tokenizer_fingerprint(model.tokenizer), "samples": self.inputs.samples,
               "prompt": self.prompt}
        return settings, key

    def data(self, unit, tokenizer) -> UnitData:
        records, fingerprint, _ = load_or_build(babilong.records_path(unit.data_key), unit.data_key,
                                                lambda: self._build(unit, tokenizer))
        return UnitData(records, fingerprint)

    def _build(self, unit, tokenizer) -> list[dict]:
        """A unit's records: a published split's rows in the reference's prompt, or samples built at its length."""
        inputs = self.inputs
        if self.published:
            return published.build(unit.task, self.splits[(unit.task, unit.context_length)][0], tokenizer,
                                   unit.context_length, inputs.samples, babilong.PROMPT_VARIANTS[self.prompt])
        return babilong.build(qa(unit.task), self.stories[unit.task], self.background, tokenizer, unit.context_length,
                              inputs.samples, inputs.seed, self.prompt)

    def generate(self, unit, data: UnitData, model) -> Generated | None:
        asks = [Ask(r["index"], r["prompt"], OUTPUT_TOKENS, stop_when=first_sentence_done) for r in data.records]
        return generated_texts(model, asks, unit.context_length or statements_budget(data.records))

    def score(self, unit, data: UnitData, generated: Generated) -> UnitOutcome:
        samples = []
        for record in sorted(data.records, key=lambda r: r["index"]):
            prediction = generated.outputs[record["index"]]["prediction"]
            right = correct(record["target"], prediction.strip(), record["question"], qa(unit.task))
            samples.append(Sample(record["index"], 100.0 if right else 0.0, target=record["target"],
                                  prediction=prediction, prompt_sha256=stable_hash(record["prompt"]),
                                  fields={"question": record["question"].strip(), "story": record["story"],
                                          "facts": len(record["facts"]), "references": record["references"],
                                          "fact_depths": record["fact_depths"], "prompt_tokens": record["prompt_tokens"],
                                          "empty_prediction": not prediction.strip()}))
        scores = [s.score for s in samples]
        metrics = [mean_metric("score", scores, is_primary=True),
                   Metric("correct", float(sum(1 for s in scores if s > 0)), n=len(scores))]
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=data.fingerprint,
                           settings=prediction_counts(samples), raw=generated.raw)
