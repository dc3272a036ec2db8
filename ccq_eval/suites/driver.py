"""What a suite's driver is: the runner's interface, with a default for everything, and three stages for a suite
that scores the model's outputs.

    data(unit, tokenizer)            -> UnitData: the unit's records, built once and frozen (or read back)
    generate(unit, data, model)      -> Generated: the model's outputs per sample (None on a data-parallel helper)
    score(unit, data, generated)     -> UnitOutcome: a pure function of the records and the outputs, so that
                                        `ccq-eval rescore` reruns it on stored outputs without a model

A driver is built from DriverInputs alone (the suite's part of the request, parsed and typed) and is handed the
tokenizer or the model as an argument where a step needs one; no step reads what another left on the driver. A
measuring suite (perplexity, cost) overrides ``evaluate`` or ``run_units`` instead of the three stages.
Importing this module loads no heavy library."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class DriverInputs:
    """The suite's part of a run request, parsed once: what its driver may read."""

    suite: Any  # suites.base.Suite
    tasks: tuple[str, ...]
    lengths: tuple[int, ...]
    samples: int | None
    options: dict = field(default_factory=dict)  # the suite's own flags, typed, defaults filled
    seed: int = 0
    data_dir: str | None = None


@dataclass(frozen=True)
class UnitData:
    """A unit's records (each with its sample ``index``) and their content fingerprint."""

    records: list[dict]
    fingerprint: str | None


@dataclass
class Generated:
    """The model's outputs for one unit: sample index -> {"prediction": text, and whatever else the model gave that
    the score keeps (Driver.generated_fields)}, unit-level notes (Driver.generated_settings) and lm-eval's raw output."""

    outputs: dict[int, dict]
    settings: dict = field(default_factory=dict)
    raw: dict | None = None


class Driver:
    """Defaults for every step the runner calls; a generating suite writes data, generate and score."""

    generated_fields: tuple[str, ...] = ()  # sample fields the generate stage writes (rescore keeps them as stored)
    generated_settings: tuple[str, ...] = ()  # unit settings the generate stage writes
    model_calls = "generation"  # what exercise() calls, as the warm-up line names it

    def __init__(self, inputs: DriverInputs):
        self.inputs = inputs

    def check_inputs(self) -> None:
        """Data present and well-formed, before the model loads (bad input raises a BadInput)."""

    def max_length(self) -> int:
        """The longest context the model is asked to hold (its LM wrapper's budget)."""
        return max(self.inputs.lengths)

    def exercise(self, model, length: int, batch: int) -> None:
        """Calls ``model`` (the torch model) once as the units will, at ``length`` x ``batch``, untimed: a run on CUDA
        does so before its first unit, so that fla compiles and tunes its kernels there and not inside a unit (Triton
        compiles per kernel variant: a packed prefill, a forward without a cache and a chunk that continues one are
        different variants). Default: the generation engine's prefill and a few cached decoding steps."""
        from ccq_eval.generation.exercise import prefill_and_decode

        prefill_and_decode(model, length, batch)

    def check_with_tokenizer(self, tokenizer) -> None:
        """What needs the model's tokenizer (a length its prompts cannot fit), before anything is written."""

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        """(settings, data key): every input of the unit's identity beyond the model and the shared flags (``model``:
        the loaded evaluand, its tokenizer and provenance)."""
        return {}, {}

    def run_units(self, units: list, model):
        """(unit, UnitOutcome or None) per unit of one task; a unit that raises fails with its reason."""
        from ccq_eval.suites.outcomes import evaluate_each

        return evaluate_each(units, lambda unit: self.evaluate(unit, model))

    def evaluate(self, unit, model):
        data = self.data(unit, model.tokenizer)
        generated = self.generate(unit, data, model)
        return None if generated is None else self.score(unit, data, generated)

    def data(self, unit, tokenizer) -> UnitData:
        raise NotImplementedError(f"{type(self).__name__} builds no data: override evaluate or the three stages")

    def generate(self, unit, data: UnitData, model) -> Generated | None:
        raise NotImplementedError(f"{type(self).__name__} generates nothing: override evaluate or the three stages")

    def score(self, unit, data: UnitData, generated: Generated):
        raise NotImplementedError(f"{type(self).__name__} scores nothing: override evaluate or the three stages")
