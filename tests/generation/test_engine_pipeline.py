"""The fixed slots' pipeline: each step picks its tokens on the device, into the next step's input, and the host
reads step t's picks only once step t + 1 is launched; a row that stopped at t drops its t + 1 pick; banned ids are
set on the device before the pick they apply to; refills wait for ``refill_threshold`` free slots. Every variant
gives batch 1's tokens."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from ccq_eval.generation import engine
from ccq_eval.generation.engine import _StaticRun, refill_threshold
from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.reference import generate_one
from ccq_eval.generation.request import Request
from ccq_eval.generation.static_rows import StaticRows
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model


def _model():
    torch.manual_seed(0)
    return tiny_model("ccq_gla").double()


def _run(model, asked, width=3):
    with torch.no_grad():
        got = _StaticRun(layout_for(model), TOKENIZER, asked, width, capture=False)()
    for request, result in zip(asked, got):
        assert result.tokens == generate_one(model, TOKENIZER, request)[0].tokens
    return got


def test_the_host_reads_a_step_only_after_the_next_one_is_launched(monkeypatch):
    events = []
    advance, picks = StaticRows.advance, StaticRows.picks
    monkeypatch.setattr(StaticRows, "advance", lambda rows: (events.append("launch"), advance(rows))[1])
    monkeypatch.setattr(StaticRows, "picks", lambda rows, turn: (events.append("read"), picks(rows, turn))[1])
    g = torch.Generator().manual_seed(3)
    asked = [Request(tuple(torch.randint(0, 256, (n,), generator=g).tolist()), max_new_tokens=6) for n in (9, 7, 5)]
    _run(_model(), asked)
    # the first token comes from the prefill, five from steps, each read after its successor's launch: the sixth
    # step is launched before the host knows the rows are done, and its picks dropped
    assert events == ["launch", "launch", "read", "launch", "read", "launch", "read", "launch", "read", "launch",
                      "read", "read"]


def test_rows_that_stop_drop_their_next_pick_and_refill_at_a_threshold(monkeypatch):
    """Rows ending at different steps (budgets and a stop token) through two slots, refilled only when both are free
    (a threshold of 2) or the queue cannot fill more."""
    model = _model()
    asked = requests()
    asked[1] = replace(asked[1], stop_ids=frozenset({generate_one(model, TOKENIZER, asked[1])[0].tokens[3]}))
    monkeypatch.setattr(engine, "refill_threshold", lambda width, requests, on_cuda: 2)
    admitted = []
    prefill = type(layout_for(model)).prefill
    monkeypatch.setattr(type(layout_for(model)), "prefill",
                        lambda layout, prompts: (admitted.append(len(prompts)), prefill(layout, prompts))[1])
    _run(model, asked, width=2)
    assert admitted[0] == 2 and all(n == 2 for n in admitted[:-1]) and sum(admitted) == len(asked), admitted


def test_a_ban_is_on_the_device_before_the_pick_it_applies_to():
    """A stop token the row would pick at its second and third tokens is banned there (min_new_tokens = 3)."""
    model = _model()
    base = requests()[0]
    free = generate_one(model, TOKENIZER, base)[0].tokens
    banned = replace(base, stop_ids=frozenset({free[1]}), min_new_tokens=3)
    assert generate_one(model, TOKENIZER, banned)[0].tokens[:2] != free[:2]  # the ban changes the output
    _run(model, [banned, requests()[1], requests()[3]])


@pytest.mark.parametrize("width,budget,expected", [(64, 32, 14), (64, 512, 3), (8, 4, 5), (3, 1, 3)])
def test_the_refill_threshold_on_cuda(width, budget, expected):
    asked = [Request((1,), max_new_tokens=budget)] * 4
    assert refill_threshold(width, asked, on_cuda=True) == expected
    assert refill_threshold(width, asked, on_cuda=False) == 1


def test_each_read_waits_on_its_own_steps_copy_not_the_newest(monkeypatch):
    """On CUDA the picks go to two pinned buffers, each copy marked by an event; reading step t waits on t's event,
    recorded before t + 1's, never on the newest one (which would wait for the step still running). Events stood in
    for on the CPU."""
    log = []

    class Event:
        def __init__(self, name):
            self.name = name

        def record(self):
            log.append(f"record {self.name}")

        def synchronize(self):
            log.append(f"wait {self.name}")

    original = StaticRows.__init__

    def with_events(rows, *args, **kwargs):
        original(rows, *args, **kwargs)
        rows._copied = [Event(0), Event(1)]

    monkeypatch.setattr(StaticRows, "__init__", with_events)
    g = torch.Generator().manual_seed(3)
    asked = [Request(tuple(torch.randint(0, 256, (n,), generator=g).tolist()), max_new_tokens=4) for n in (9, 7)]
    _run(_model(), asked, width=2)
    assert log == ["record 0", "record 1", "wait 0", "record 0", "wait 1", "record 1", "wait 0", "wait 1"]


def test_on_cuda_the_threshold_comes_from_the_models_own_refill_cost(monkeypatch):
    """After a few steps the fixed slots measure this model's prefill fixed cost and their own step period, once a
    process, record them, and refill at the threshold they give (here forced to 'on CUDA' on the CPU)."""
    from ccq_eval.generation import refill_cost

    refill_cost.forget()
    made = []
    init = _StaticRun.__init__

    def as_on_cuda(run, *args, **kwargs):
        init(run, *args, **kwargs)
        run.on_cuda = True
        made.append(run)

    monkeypatch.setattr(_StaticRun, "__init__", as_on_cuda)
    monkeypatch.setattr(refill_cost, "prefill_fixed_seconds", lambda layout: 0.006)  # 6 ms, whatever this CPU says
    model = _model()
    asked = [replace(r, max_new_tokens=12) for r in requests()] * 2
    _run(model, asked, width=3)
    (cost,) = refill_cost.recorded().values()
    assert cost["prefill_fixed_ms"] == pytest.approx(6.0) and cost["step_ms"] > 0
    assert cost["overhead_steps"] == pytest.approx(6.0 / cost["step_ms"], rel=1e-2)
    assert made[0].threshold == refill_threshold(3, asked, True, made[0].cost.overhead_steps)
    assert len(made[0].periods) >= engine.STEPS_BEFORE_MEASURING
    refill_cost.forget()


def test_the_prefill_fixed_cost_is_what_eight_prompts_do_not_multiply():
    from ccq_eval.generation import refill_cost

    class Layout:
        model = type("M", (), {"device": torch.device("cpu")})()

        def prefill(self, prompts):
            import time

            time.sleep(0.004 + 0.001 * len(prompts))  # 4 ms fixed, 1 ms a prompt

    assert refill_cost.prefill_fixed_seconds(Layout()) == pytest.approx(0.004, abs=0.002)
