"""The efficiency figure's decoding is the engine's own: where the engine decodes in fixed slots (on CUDA), it times
their pipelined steps (``advance`` / ``picks``, the picks made on the device), not an eager step read back each
time; after a capture (which empties torch's cache) an untimed prefill comes before the next timed one."""

from __future__ import annotations

import torch

from ccq_eval.generation import engine
from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.static_rows import StaticRows
from ccq_eval.generation.step_graph import CheckedGraph
from ccq_eval.suites.efficiency.measure import measure_once
from tests.helpers import tiny_model


def test_fixed_slots_are_timed_as_the_engine_steps_them_and_a_prefill_follows_the_capture(monkeypatch):
    torch.manual_seed(0)
    model = tiny_model("gla")
    calls = {"advance": 0, "step": 0, "prefill": 0}
    advance, step = StaticRows.advance, StaticRows.step

    def counted(name, fn):
        def call(*args, **kwargs):
            calls[name] += 1
            return fn(*args, **kwargs)
        return call

    def captured(stepping):  # a capture that worked, as on CUDA
        stepping.outcome = "captured"
        return stepping.rows.step_and_pick()

    layout = type(layout_for(model))
    monkeypatch.setattr(engine, "fixed_slots", lambda layout: layout.refills)
    monkeypatch.setattr(StaticRows, "advance", counted("advance", advance))
    monkeypatch.setattr(StaticRows, "step", counted("step", step))
    monkeypatch.setattr(CheckedGraph, "capture_and_step", captured)
    monkeypatch.setattr(layout, "prefill", counted("prefill", layout.prefill))
    run = measure_once(model, torch.randint(0, 200, (2, 24)), decode_steps=5)
    assert calls == {"advance": 6, "step": 0, "prefill": 2}  # the capture's step untimed, then five; a prefill after
    assert run.graph == "captured" and run.decode_s > 0


def test_eager_steps_stay_eager_and_nothing_follows_without_a_capture(monkeypatch):
    torch.manual_seed(0)
    model = tiny_model("gla")
    prefills = []
    layout = type(layout_for(model))
    prefill = layout.prefill
    monkeypatch.setattr(layout, "prefill", lambda self, prompts: (prefills.append(1), prefill(self, prompts))[1])
    run = measure_once(model, torch.randint(0, 200, (2, 24)), decode_steps=3)
    assert run.graph == "eager: not on CUDA" and len(prefills) == 1
