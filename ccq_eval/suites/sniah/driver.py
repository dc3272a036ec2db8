"""The S-NIAH suite's driver, in three stages: data (RULER's generator, run once per data key and frozen in the
cache), generate (the unit's prompts through the model's engine, greedy with RULER's budget, each answer's NLL
measured from the decoding prefill and a row stopped once every needle value is out), score (RULER's string match on
each prediction, a pure function of the records and the outputs: `ccq-eval rescore` reruns it)."""

from __future__ import annotations

import functools

from ccq_eval.data.cache import stable_hash, tokenizer_fingerprint
from ccq_eval.suites.base import format_length
from ccq_eval.suites.driver import Driver, Generated, UnitData
from ccq_eval.suites.generating import Ask, generate_answers
from ccq_eval.suites.outcomes import Metric, Sample, UnitOutcome, mean_metric, prediction_counts
from ccq_eval.suites.sniah import data as sniah
from ccq_eval.suites.sniah.haystack import load_haystack, resolve_haystack_path
from ccq_eval.suites.sniah.protocol import TASK_VERSION, TOKENS_TO_GENERATE
from ccq_eval.suites.sniah.scoring import answer_prefix, ruler_string_match
from ccq_eval.suites.sniah.sizing import SniahError, prompt_of

# points between the drawn depth and where the needle went before a unit says so: RULER rounds the depth down to
# a sentence boundary, so a short haystack of a few sentences moves it by up to one sentence's share
DEPTH_TOLERANCE = 25.0


def moved_needles(samples: list[Sample]) -> dict:
    """A warning in the unit's settings when needles sit far from their drawn depth (a haystack with few sentence
    boundaries): how many, and the largest gap. The heatmap places samples at the depth used."""
    gaps = [abs(s.fields["depth_used"] - s.fields["depth"]) for s in samples if "depth_used" in s.fields]
    moved = [g for g in gaps if g > DEPTH_TOLERANCE]
    if not moved:
        return {}
    return {"depth_warning": f"{len(moved)} of {len(samples)} needles sit more than {DEPTH_TOLERANCE:g} points from their "
                       f"drawn depth (up to {max(moved):.0f}): the haystack has few sentence boundaries; the depth "
                       "used is stored per sample (depth_used)"}


class SniahDriver(Driver):
    """Also the multi-needle suite's (suites/multi_niah/driver.py): what differs is the generator module
    (``generator``), the answer scored for its NLL, the per-sample fields and the unit's metrics."""

    generator = sniah  # VARIANTS, smallest_length, dataset_key, load_or_generate
    generated_fields = ("answer_nll",)
    generated_settings = ("answer_nll_from_prefill",)

    def answer(self, doc: dict) -> str:
        """The text whose teacher-forced NLL after the prompt is stored (``answer_nll``)."""
        return doc["outputs"][0]

    def tokens_to_generate(self, task: str) -> int:
        """The generation budget of a task's samples (RULER's, per task)."""
        return TOKENS_TO_GENERATE

    def match(self, task: str, prediction: str, references: list[str]) -> float:
        """A prediction's score in [0, 1]: RULER's string_match_all (the share of references found)."""
        return ruler_string_match(prediction, references)

    def sample_fields(self, task: str, doc: dict, prediction: str) -> dict:
        return {"depth": doc["depth"], "depth_used": sniah.depth_used(task, doc), "key": doc["key"],
                "answer_prefix": answer_prefix(prediction, doc["outputs"][0])}

    def unit_metrics(self, samples: list[Sample]) -> list[Metric]:
        scores = [s.score for s in samples]
        return [mean_metric("score", scores, is_primary=True),
                Metric("correct", float(sum(1 for s in scores if s > 0)), n=len(scores)),
                mean_metric("answer_prefix", [s.fields["answer_prefix"] for s in samples])]

    def scores_full(self, task: str, prediction: str, references: list[str]) -> bool:
        """The early-stop rule: the prefix generated so far already scores 1, so every continuation does."""
        return self.match(task, prediction, references) == 1.0

    @functools.cached_property
    def haystack(self):
        """The essay haystack (None when no chosen task reads one): a function of the inputs, read once."""
        path = resolve_haystack_path(self.inputs.options["haystack"], self.inputs.data_dir)
        needs_essays = any(self.generator.VARIANTS[t].haystack == "essay" for t in self.inputs.tasks)
        return load_haystack(path) if needs_essays else None

    def check_inputs(self) -> None:
        self.haystack  # noqa: B018 - a missing or malformed haystack is bad input before the model loads

    def check_with_tokenizer(self, tokenizer) -> None:
        inputs = self.inputs
        for task in inputs.tasks:  # a length that cannot hold every sample's prompt skeleton is bad input
            for length in inputs.lengths:
                smallest = self.generator.smallest_length(task, tokenizer, self.haystack, length, inputs.samples,
                                                          inputs.seed)
                if length < smallest:
                    least = getattr(self.generator, "least_haystack", lambda task: "an empty haystack")(task)
                    raise SniahError(f"--lengths: {length} tokens cannot hold every {task} prompt "
                                     f"({smallest} tokens at least, with {least}); use larger lengths")

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        essay = self.generator.VARIANTS[task].haystack == "essay"
        haystack = self.haystack
        settings = {"task_version": TASK_VERSION, "tokens_to_generate": self.tokens_to_generate(task),
                    "haystack": {"name": haystack.name, "sha256": haystack.fingerprint} if essay else None}
        data_key = self.generator.dataset_key(task, tokenizer_fingerprint(model.tokenizer), length, self.inputs.samples,
                                              self.inputs.seed, haystack)
        return settings, data_key

    # --- data -----------------------------------------------------------------------------------

    def data(self, unit, tokenizer) -> UnitData:
        """Generated once per data key and frozen; the plugin reads the frozen records."""
        from tqdm import tqdm

        inputs = self.inputs
        with tqdm(total=inputs.samples, desc=f"data {unit.task} {format_length(unit.context_length)}",
                  disable=None, leave=False) as bar:
            records, fingerprint, _ = self.generator.load_or_generate(
                unit.task, tokenizer, unit.context_length, inputs.samples, inputs.seed, self.haystack, bar,
                key=unit.data_key)
        return UnitData(records, fingerprint)

    # --- generate -------------------------------------------------------------------------------

    def asks(self, task: str, records: list[dict]) -> list[Ask]:
        """Each sample's generation: RULER's budget, no stop string; the answer scored from the prefill (partial
        retrieval shows in its NLL long before exact match moves); the row stopped once its output scores 1 (RULER
        scores containment, so no later token can change it, and the answer prefix is fixed by then too)."""
        return [Ask(d["index"], prompt_of(d), self.tokens_to_generate(task), score=" " + self.answer(d),
                    stop_when=functools.partial(self.scores_full, task, references=d["outputs"])) for d in records]

    def generate(self, unit, data: UnitData, model) -> Generated | None:
        answers = generate_answers(model, self.asks(unit.task, data.records), unit.context_length)
        if answers is None:  # a data-parallel rank other than 0: its share is gathered by rank 0
            return None
        outputs = {index: {"prediction": a.text, "answer_nll": a.continuation_nll} for index, a in answers.items()}
        # how many answer NLLs the model measured (none for a model that only generates)
        scored = sum(1 for a in answers.values() if a.continuation_nll is not None)
        return Generated(outputs, {"answer_nll_from_prefill": scored})

    # --- score ----------------------------------------------------------------------------------

    def score(self, unit, data: UnitData, generated: Generated) -> UnitOutcome:
        """RULER's string match of each prediction against its needle values, and what the unit reports: a pure
        function of the records and the model's outputs."""
        samples = []
        for doc in sorted(data.records, key=lambda d: d["index"]):
            output = generated.outputs[doc["index"]]
            prediction = output["prediction"]
            samples.append(Sample(
                doc["index"], 100.0 * self.match(unit.task, prediction, doc["outputs"]),
                target=", ".join(doc["outputs"]),
                prediction=prediction, prompt_sha256=stable_hash(prompt_of(doc)),
                fields={**self.sample_fields(unit.task, doc, prediction),
                        "prompt_tokens": doc["length"] - self.tokens_to_generate(unit.task),
                        "haystack_units": doc["haystack_units"], "haystack_passes": doc.get("haystack_passes", 1),
                        "empty_prediction": not prediction.strip(),
                        "answer_nll": output.get("answer_nll")}))
        metrics = self.unit_metrics(samples)
        nlls = [s.fields["answer_nll"] for s in samples]
        if all(v is not None for v in nlls):
            metrics.append(Metric("answer_nll", sum(nlls) / len(nlls), n=len(nlls), higher_is_better=False))
        extra = {**prediction_counts(samples), **generated.settings, **moved_needles(samples)}
        return UnitOutcome(status="complete", metrics=metrics, samples=samples, fingerprint=data.fingerprint,
                           settings=extra, raw=generated.raw)


class SeveralAnswersDriver(SniahDriver):
    """The drivers of tasks with several expected answers a sample (the multi-needle and ruler suites): their
    answers' NLL is one ", "-joined continuation, and a unit reports RULER's score (string_match_all: the mean share
    of expected answers found) and how many samples found every one."""

    ANSWER_SEPARATOR = ", "

    def answer(self, doc: dict) -> str:
        return self.ANSWER_SEPARATOR.join(doc["outputs"])

    def unit_metrics(self, samples: list[Sample]) -> list[Metric]:
        scores = [s.score for s in samples]
        return [mean_metric("score", scores, is_primary=True),
                Metric("all_found", float(sum(1 for s in scores if s == 100.0)), n=len(scores))]
