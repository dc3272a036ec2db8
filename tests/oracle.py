"""Scripted lm-eval models for the tests: they read the needle's value out of the prompt."""

from __future__ import annotations

import contextlib
import re
import uuid

from lm_eval.api.model import LM
from lm_eval.api.registry import MODEL_REGISTRY, register_model

from ccq_eval.suites.driver import Driver

NEEDLE = re.compile(r"One of the special magic (?:numbers|uuids) for (.+?) is: (\S+)\.")
QUESTION = re.compile(r"The special magic \w+ for (.+?) mentioned in the provided text (?:is|are)$")


def wrong_value(value: str) -> str:
    if value.isdigit():
        return str((int(value) - 10**6 + 1) % (9 * 10**6) + 10**6)  # another 7-digit number
    return str(uuid.UUID(int=uuid.UUID(value).int ^ (1 << 70)))


class GeneratesOnly:
    """generation.generator.Generator and lm.adapter.ModelAdapter for a stand-in that only generates: no budget to
    set, no likelihoods. A subclass writes ``respond(prompt) -> text``; ``generate`` (the generating suites' call)
    reads each request's prompt ids with the byte tokenizer and answers in its tokens, ``generate_until`` (lm-eval's)
    answers its contexts."""

    scores_text = False

    def budget(self, max_length):
        return contextlib.nullcontext(self)

    def respond(self, prompt: str) -> str:
        raise NotImplementedError

    def generate(self, requests):
        from ccq_eval.generation.request import Result
        from tests.helpers import byte_tokenizer

        tokenizer = byte_tokenizer()
        return [Result(tokens=tokenizer.encode(self.respond(tokenizer.decode(list(r.prompt))),
                                               add_special_tokens=False)) for r in requests]

    def generate_until(self, requests, disable_tqdm: bool = False):
        return [self.respond(request.args[0]) for request in requests]


class AnswersFromPrompt(GeneratesOnly, LM):
    """Answers each prompt with ``answer(prompt)``: a scripted solver of a suite's tasks."""

    def __init__(self, answer):
        super().__init__()
        self.answer = answer

    def respond(self, prompt: str) -> str:
        return self.answer(prompt)

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError


def answers_loader(name: str, answer):
    """A run's model loader (run_suite's) for AnswersFromPrompt(answer), on the byte tokenizer, provenance ``name``."""
    import torch

    from ccq_eval.run import Evaluand
    from tests.helpers import byte_tokenizer

    def load(request, max_length):
        provenance = {"weights_sha256": name, "config": {"model_type": "scripted", "name": name}, "dtype": "none",
                      "device": "cpu", "ccq_overrides": {}, "versions": {"torch": torch.__version__}}
        model = AnswersFromPrompt(answer)
        return Evaluand(generator=model, lm=model, tokenizer=byte_tokenizer(), tokenizer_path="bytes",
                        provenance=provenance)
    return load


def stored_units(store) -> tuple[dict, list]:
    """({(task, length, metric): value}, [(task, settings, score, target, prediction, fields)]) of a store."""
    import sqlite3

    db = sqlite3.connect(store)
    metrics = {(t, L, m): v for t, L, m, v in db.execute(
        "SELECT u.task, u.context_length, m.metric, m.value FROM metrics m JOIN units u ON m.unit_id = u.id")}
    samples = db.execute("SELECT u.task, u.settings, s.score, s.target, s.prediction, s.fields FROM samples s "
                         "JOIN units u ON s.unit_id = u.id").fetchall()
    return metrics, samples


def asked_keys(query: str) -> list[str]:
    """RULER's query: one key, or "a, b, c, and d"."""
    return query.replace(", and ", ", ").split(", ") if ", and " in query else [query]


class OracleLM(GeneratesOnly, LM):
    """Answers the values of the needles whose keys the prompt asks for (or wrong ones; or, with ``share``, only
    the first share of them)."""

    def __init__(self, wrong: bool = False, share: float = 1.0):
        super().__init__()
        self.wrong, self.share = wrong, share
        self.prompts: list[str] = []

    def respond(self, prompt: str) -> str:
        self.prompts.append(prompt)
        needles = NEEDLE.findall(prompt)
        values = [v for key in asked_keys(QUESTION.search(prompt).group(1)) for k, v in needles if k == key]
        values = values[:max(1, round(len(values) * self.share))]
        return " " + ", ".join(wrong_value(v) if self.wrong else v for v in values) + "."

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError


import lm_eval.models  # noqa: E402,F401 - lm-eval fills its registry lazily only while it is empty: fill it first

if "ccq-test-oracle" not in MODEL_REGISTRY:
    register_model("ccq-test-oracle")(OracleLM)


def oracle_loader(tokenizer_dir, wrong=False, share=1.0):
    """An evaluand loader for the runner: the oracle LM with the byte tokenizer."""
    import torch

    from ccq_eval.run import Evaluand
    from tests.helpers import byte_tokenizer

    def load(request, max_length):
        provenance = {"weights_sha256": f"oracle-{wrong}-{share}",
                      "config": {"model_type": "oracle", "wrong": wrong, "share": share},
                      "dtype": "none", "device": "cpu", "ccq_overrides": {},
                      "versions": {"torch": torch.__version__}}
        model = OracleLM(wrong=wrong, share=share)
        return Evaluand(generator=model, lm=model, tokenizer=byte_tokenizer(), tokenizer_path=str(tokenizer_dir),
                        provenance=provenance)
    return load


def scripted_suite(name: str, tasks: tuple, lengths: tuple):
    """A suite built on the interface alone, for runner tests: each unit scores ScriptedDriver.values
    [its length] (default: the length itself)."""
    from ccq_eval.suites.base import Suite

    class ScriptedSuite(Suite):
        def driver(self, inputs):
            return ScriptedDriver(inputs)

    return ScriptedSuite(name=name, tasks=tasks, default_lengths=lengths, default_samples=1)


class ScriptedDriver(Driver):
    """Only what differs from the defaults: the unit's settings and its one number."""

    values: dict = {}

    def unit_settings(self, task, length, model):
        return {"max_length": length}, {"scripted": task}

    def evaluate(self, unit, model):
        from ccq_eval.suites.outcomes import Metric, UnitOutcome

        value = self.values.get(unit.context_length, float(unit.context_length))
        return UnitOutcome("complete", metrics=[Metric("score", value, stderr=0.5, is_primary=True)])
