"""Fixed slots (generation/static_rows.py, stepped through step_graph.py): the cache stays in the same buffers step
after step, and the CUDA graph's self-check, run here against a stand-in for torch.cuda's graph API: a replay that matches the eager step is kept; a
capture that fails, or a replay that parts from the eager step, falls back to eager steps, says why once, and
changes no token."""

from __future__ import annotations

import contextlib
import warnings

import pytest
import torch

from ccq_eval.generation import layouts, step_graph
from ccq_eval.generation.engine import _StaticRun, generate
from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.reference import generate_one
from ccq_eval.generation.cache_rows import leaves, rebuild
from ccq_eval.generation.static_rows import StaticRows
from ccq_eval.ops.ccq import CCQState
from tests.generation.test_engine import TOKENIZER, requests
from tests.helpers import tiny_model


def test_leaves_and_rebuild_walk_every_state_kind():
    state = {"recurrent_state": (torch.zeros(2, 3), CCQState(torch.zeros(2), torch.ones(2, 1), torch.ones(2, 1, 1))),
             "conv_state": (torch.zeros(2, 4),), "attn_state": None, "offset": 7}
    found = leaves(state)
    assert len(found) == 5
    rebuilt = rebuild(state, iter([t + 1 for t in found]))
    assert [float(t.sum()) for t in leaves(rebuilt)] == [float((t + 1).sum()) for t in found]
    assert rebuilt["offset"] == 7 and rebuilt["attn_state"] is None
    assert isinstance(rebuilt["recurrent_state"][1], CCQState)


@torch.no_grad()
def test_the_cache_stays_in_its_buffers_and_moves_on():
    torch.manual_seed(0)
    model = tiny_model("ccq_gated_deltanet").double()
    layout = layout_for(model)
    batch, _ = layout.prefill([(1, 2, 3, 4), (5, 6)])
    rows = StaticRows(model, batch.cache, rows=2, width=3, capture=False)
    addresses = [b.data_ptr() for b in rows.buffers]
    before = [b.clone() for b in rows.buffers]
    rows.step([7, 8, 9])
    state = [t for layer in rows.cache.layers for t in leaves(layer.state)]
    assert [t.data_ptr() for t in state] == addresses  # the cache reads the buffers
    assert any(not torch.equal(a, b) for a, b in zip(before, rows.buffers))  # and they hold the new state


class StandIn:
    """torch.cuda's stream and graph API, on the CPU. ``replay``: what a captured graph's replay does ("right",
    "drifts": right picks over a state a percent off, "stale": nothing, "raises"); ``fail``: where the capture breaks ("entry", or "layer <k>": the k-th token mixer
    raises while capturing, as a host sync there does, and the graph's exit raises its own error over it)."""

    def __init__(self, monkeypatch, replay: str = "right", fail: str | None = None, model=None):
        self.made: list[StaticRows] = []
        self.replays, self.capturing = 0, False
        original = StaticRows.__init__
        monkeypatch.setattr(StaticRows, "__init__", lambda rows, *a, **k: (original(rows, *a, **k),
                                                                           self.made.append(rows))[0])
        stand_in = self

        class Graph:
            def replay(self):
                stand_in.replays += 1
                if replay == "raises":
                    raise RuntimeError("CUDA error: an illegal memory access was encountered")
                if replay in ("right", "drifts"):  # a graph writes its outputs where the capture put them
                    rows = stand_in.made[-1]
                    rows.stepping.logits.copy_(rows.step_and_pick())
                    if replay == "drifts":  # the same picks, a state a percent off
                        rows.buffers[0].mul_(1.01)
                # "stale": a graph that recorded nothing does nothing

        class Stream:
            def __init__(self, name="side"):
                self.name = name

            def wait_stream(self, other):
                pass

        self.default = self.current = Stream("default")

        @contextlib.contextmanager
        def stream(chosen):
            saved, stand_in.current = stand_in.current, chosen
            try:
                yield
            finally:
                stand_in.current = saved

        def set_stream(chosen):
            stand_in.current = chosen

        @contextlib.contextmanager
        def capture(graph):
            if fail == "entry":
                raise RuntimeError("operation not permitted when stream is capturing\nmore")
            stand_in.capturing, saved, stand_in.current = True, stand_in.current, Stream("capture")
            try:
                yield
            except Exception:
                # as torch's graph exit: capture_end() raises before the capture's stream context is left
                raise RuntimeError("CUDA error: operation failed due to a previous error during capture")
            finally:
                stand_in.capturing = False
            stand_in.current = saved

        if fail and fail.startswith("layer "):
            mixer = mixers(model)[int(fail.split()[1])]

            def host_sync(module, args, kwargs):
                if stand_in.capturing:
                    raise RuntimeError("CUDA error: operation not permitted when stream is capturing (a host sync)")

            handle = mixer.register_forward_pre_hook(host_sync, with_kwargs=True)
            monkeypatch.setattr(self, "hook", handle, raising=False)
        monkeypatch.setattr(torch.cuda, "Stream", Stream)
        monkeypatch.setattr(torch.cuda, "stream", stream)
        monkeypatch.setattr(torch.cuda, "set_stream", set_stream)
        monkeypatch.setattr(torch.cuda, "current_stream", lambda: stand_in.current)
        monkeypatch.setattr(torch.cuda, "CUDAGraph", Graph)
        monkeypatch.setattr(torch.cuda, "graph", capture)
        monkeypatch.setattr(step_graph, "_WARNED", set())
        monkeypatch.setattr(step_graph, "_OUTCOMES", {})


def mixers(model) -> list[torch.nn.Module]:
    """The model's token mixers (fla's layer classes), in order."""
    return [m for m in model.modules() if any(c.__module__.startswith("fla.layers.") for c in type(m).__mro__)
            and type(m).__module__.startswith(("fla.layers.", "ccq_eval."))]


def static_run(model, asked, stand_in):
    with warnings.catch_warnings(record=True) as caught, torch.no_grad():
        warnings.simplefilter("always")
        got = _StaticRun(layout_for(model), TOKENIZER, asked, 3, capture=True)()
    for request, result in zip(asked, got):
        assert result.tokens == generate_one(model, TOKENIZER, request)[0].tokens
    return [str(w.message) for w in caught if "CUDA graph" in str(w.message)]


@pytest.mark.parametrize("replay,said", [("right", None), ("stale", "picked other tokens than the eager step"),
                                         ("drifts", "differed from the eager step"),
                                         ("raises", "capture failed: RuntimeError: CUDA error: an illegal memory")])
def test_the_capture_checks_itself_and_falls_back_once(monkeypatch, replay, said):
    torch.manual_seed(0)
    model = tiny_model("ccq_gla").double()
    stand_in = StandIn(monkeypatch, replay)
    messages = static_run(model, requests(), stand_in)
    if said is None:
        assert messages == [] and stand_in.made[-1].stepping.graph is not None
        assert stand_in.replays > 5  # every step after the capture was a replay
        assert step_graph.decoding_graph(model) == "captured"
    else:
        assert len(messages) == 1 and said in messages[0] and stand_in.made[-1].stepping.graph is None
        assert step_graph.decoding_graph(model).startswith("eager: ")


@pytest.mark.parametrize("kind", ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "mamba2"])
def test_a_capture_that_breaks_anywhere_changes_no_token_and_names_its_cause(monkeypatch, kind):
    """At entry, or inside any layer's forward (the earlier layers' states then point at the capture's own,
    never-computed tensors): the eager retry starts from the state before the step, and the message names the
    error that broke the capture, not the one the graph's exit raised over it."""
    torch.manual_seed(0)
    model = tiny_model(kind).double()
    points = ["entry"] + [f"layer {k}" for k in range(len(mixers(model)))]
    assert len(points) == 3  # two token mixers: a failure after one of them is covered
    for point in points:
        stand_in = StandIn(monkeypatch, fail=point, model=model)
        messages = static_run(model, requests(), stand_in)
        assert len(messages) == 1 and stand_in.made[-1].stepping.graph is None, point
        assert "operation not permitted when stream is capturing" in messages[0], (point, messages)
        assert "previous error during capture" not in messages[0]
        assert stand_in.current is stand_in.default, (point, stand_in.current.name)  # the stream before the capture
        if hasattr(stand_in, "hook"):
            stand_in.hook.remove()


def test_the_cpu_default_is_no_capture_and_a_shrinking_batch(monkeypatch):
    model = tiny_model("gla")
    monkeypatch.setattr(torch.cuda, "CUDAGraph", lambda: pytest.fail("no capture off CUDA"))
    made = []
    original = StaticRows.__init__
    monkeypatch.setattr(StaticRows, "__init__", lambda rows, *a, **k: (original(rows, *a, **k), made.append(1))[0])
    generate(model, TOKENIZER, requests()[:2], batch_size=2)
    assert made == []
