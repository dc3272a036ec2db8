"""An own decoding step is trusted only once it agrees with its reference on the device (ops/trust.py):
a stand-in step that writes a wrong state, or one that raises, is caught on first use, turned off for the process and
replaced by fla's function with its state copied home; the engine's fixed slots then give batch 1's tokens, and the
verdicts name the fallback. ``--kernels own`` trusts unchecked (the wrong step then changes tokens: what the check
is for), ``--kernels reference`` never runs the own step. CCQ's fused step: tests/interpreter/test_kernel_trust.py."""

from __future__ import annotations

import warnings

import pytest
import torch

from ccq_eval.ops.gated_deltanet import fused_recurrent as gdn_step
from ccq_eval.ops.gla import fused_recurrent as gla_step
from ccq_eval.generation.engine import generate
from ccq_eval.ops import trust
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model
from tests.kernel_verdicts import fresh_verdicts  # noqa: F401 - autouse

# each family's step and the route that names it
STEPS = {"gla": (gla_step, "fused_recurrent_gla in place"), "ccq_gla": (gla_step, "fused_recurrent_gla in place"),
         "gated_deltanet": (gdn_step, "fused_recurrent_gated_delta_rule in place"),
         "delta_net": (gdn_step, "fused_recurrent_delta_rule in place")}


STATE_AT = {gla_step: 4, gdn_step: 5}  # where each torch step takes the state


def wrong_state(module):
    """The module's torch step, writing a state half what it should be."""
    step = module._torch_step

    def halves(*args, **kwargs):
        o = step(*args, **kwargs)
        args[STATE_AT[module]].mul_(0.5)
        return o
    return halves


def raises(*args, **kwargs):
    raise RuntimeError("stand-in: the kernel failed to launch")


def batch_one(model):
    return [r.tokens for r in generate(model, TOKENIZER, requests(), batch_size=1, static=False)]


def fixed_slots(model):
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        tokens = [r.tokens for r in generate(model, TOKENIZER, requests(), batch_size=3, static=True)]
    return tokens, [str(w.message) for w in said if "own kernel off" in str(w.message)]


@pytest.mark.parametrize("fault", ["wrong state", "raises"])
@pytest.mark.parametrize("kind", list(STEPS))
def test_a_faulty_step_is_caught_and_the_run_gives_batch_ones_tokens(kind, fault, monkeypatch):
    torch.manual_seed(0)
    model = tiny_model(kind)
    expected = batch_one(model)
    module, kernel = STEPS[kind]
    monkeypatch.setattr(module, "_torch_step", wrong_state(module) if fault == "wrong state" else raises)
    tokens, said = fixed_slots(model)
    assert tokens == expected
    assert len(said) == 1 and kernel in said[0], said  # once, naming the kernel
    (verdict,) = [v for name, v in trust.verdicts().items() if name.startswith(kernel)]
    assert verdict.startswith("reference") and ("differs" in verdict if fault == "wrong state" else "raised" in verdict)


@pytest.mark.parametrize("kind", list(STEPS))
def test_a_sound_step_is_trusted_and_named(kind):
    torch.manual_seed(0)
    model = tiny_model(kind)
    tokens, said = fixed_slots(model)
    assert tokens == batch_one(model) and not said
    _, kernel = STEPS[kind]
    (verdict,) = [v for name, v in trust.verdicts().items() if name.startswith(kernel)]
    assert verdict.startswith("own (agrees")


def test_kernels_own_trusts_unchecked_and_the_wrong_step_then_changes_tokens(monkeypatch):
    """What the check guards against: the same wrong step, unchecked, changes the engine's tokens."""
    torch.manual_seed(0)
    model = tiny_model("gla")
    expected = batch_one(model)
    monkeypatch.setattr(gla_step, "_torch_step", wrong_state(gla_step))
    trust.set_mode("own")
    tokens, _ = fixed_slots(model)
    assert tokens != expected and trust.verdicts() == {}


def test_kernels_reference_never_runs_the_own_step(monkeypatch):
    torch.manual_seed(0)
    model = tiny_model("gla")
    expected = batch_one(model)
    monkeypatch.setattr(gla_step, "_torch_step", raises)
    trust.set_mode("reference")
    tokens, said = fixed_slots(model)
    assert tokens == expected and not said
    assert all(v == "reference (--kernels reference)" for v in trust.verdicts().values())


def test_a_step_not_in_place_is_caught():
    """A step that returns a fresh state (right values, wrong place) is refused: the fixed slots would lose it."""
    q = torch.randn(2, 1, 2, 8)
    state = torch.randn(2, 2, 8, 8)

    def fresh(**kwargs):
        return kwargs["q"], kwargs["initial_state"].clone()

    with pytest.raises(trust.NotInPlace):
        trust.check_in_place(state, fresh(q=q, initial_state=state)[1])


def test_a_mode_other_than_the_three_is_refused():
    with pytest.raises(ValueError, match="auto"):
        trust.set_mode("fast")


def predictions(store) -> list:
    import sqlite3

    with sqlite3.connect(store) as db:
        return db.execute("SELECT s.idx, s.prediction FROM samples s ORDER BY s.idx").fetchall()


def unit_kernels(store) -> dict:
    import json
    import sqlite3

    with sqlite3.connect(store) as db:
        (settings,) = db.execute("SELECT settings FROM units").fetchone()
    return json.loads(settings).get("kernels", {})


def test_a_run_on_a_faulty_step_stores_batch_ones_predictions_and_names_the_fallback(tmp_path, monkeypatch):
    """A whole run with the engine's fixed slots on (as on CUDA): the wrong step is caught, the unit's predictions
    are batch 1's, and the unit's provenance names the kernel that fell back."""
    from ccq_eval.cli import main
    from ccq_eval.generation import engine

    argv = ["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "3",
            "--device", "cpu"]
    assert main([*argv, "--store", str(tmp_path / "one.db"), "--batch-size", "1"]) == 0
    monkeypatch.setattr(engine, "fixed_slots", lambda layout: layout.refills)  # as on CUDA
    monkeypatch.setattr(gla_step, "_torch_step", wrong_state(gla_step))
    trust.forget()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([*argv, "--store", str(tmp_path / "three.db"), "--batch-size", "3"]) == 0
    assert predictions(tmp_path / "three.db") == predictions(tmp_path / "one.db")
    (name, path), = unit_kernels(tmp_path / "three.db").items()
    assert name.startswith("fused_recurrent_gla in place, gla layers (torch)") and path.startswith("reference (differs")


def test_kernels_reference_is_recorded_with_the_run(tmp_path, monkeypatch):
    from ccq_eval.cli import main
    from ccq_eval.generation import engine

    monkeypatch.setattr(engine, "fixed_slots", lambda layout: layout.refills)
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "2",
                 "--device", "cpu", "--store", str(tmp_path / "r.db"), "--kernels", "reference"]) == 0
    assert set(unit_kernels(tmp_path / "r.db").values()) == {"reference (--kernels reference)"}


@pytest.mark.parametrize("mode,path", [("auto", "own (agrees"), ("reference", "reference (--kernels reference)")])
def test_env_checks_each_own_kernel_here_and_shows_its_path(mode, path, capsys):
    from ccq_eval.cli import main

    assert main(["env", "--device", "cpu", "--kernels", mode]) == 0
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if " layers (torch) " in line]
    assert len(lines) == 3, out  # GLA's, Gated DeltaNet's and DeltaNet's steps at the 1.3B heads
    assert all(path in line for line in lines) and "H=4 K=256 HV=4 V=512 float32 cpu" in lines[0]
    assert f"own kernels (--kernels {mode}" in out
