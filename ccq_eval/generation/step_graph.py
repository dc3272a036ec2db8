"""The fixed slots' decoding step captured as a CUDA graph that checks itself where it runs (generation/static_rows.py
holds the slots it steps).

The first replay is compared with the same step run eagerly from the same state. A capture that fails (at entry,
inside any layer, or in the check's replay) or a replay that differs falls back to eager steps, says why once per
model (the error that broke the capture, not the one ``torch.cuda.graph`` raises over it), and first puts every
layer's state back into the buffers, as it was before the step: fla's layers fill the cache's state dicts in place,
so a forward cut short leaves earlier layers bound to tensors the capture allocated and never computed.
``decoding_graph`` tells how the latest decoding ran."""

from __future__ import annotations

import warnings

import torch

_WARNED: set[str] = set()
_OUTCOMES: dict[str, str] = {}  # model class -> how its latest fixed-slot decoding ran (``decoding_graph``)
# a replay that parts from the eager step by more than this (relative to the largest value) is wrong, not rounding
REPLAY_TOLERANCE = 1e-3


def decoding_graph(model) -> str | None:
    """How this model's latest fixed-slot decoding ran: ``captured``, ``eager: <why>``, or None (none ran)."""
    return _OUTCOMES.get(type(model).__name__)


def decoding_graphs(forget: bool = False) -> dict[str, str]:
    """Model class name -> how its latest fixed-slot decoding ran, for every model this process decoded with; with
    ``forget``, the record starts afresh after this call (a check that measures one model after another)."""
    seen = dict(_OUTCOMES)
    if forget:
        _OUTCOMES.clear()
    return seen


def first_cause(exc: BaseException) -> BaseException:
    """The exception a chain started from: ``torch.cuda.graph``'s exit raises its own "operation failed due to a
    previous error during capture" over the error that broke the capture (its ``__context__``)."""
    seen = set()
    while id(exc) not in seen and (exc.__cause__ or exc.__context__) is not None:
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return exc


class CheckedGraph:
    """How ``rows`` (a StaticRows) take a step: captured on the first step where ``capture`` asks for it, replayed
    after; eager where the capture was not asked for or fell back. ``outcome``: ``captured`` or ``eager: <why>``."""

    def __init__(self, rows, capture: bool):
        self.rows, self.pending = rows, capture  # capture: on CUDA (the engine decides); one try per batch
        self.graph, self.logits = None, None
        self.outcome = None if capture else "eager: not on CUDA"

    def step(self) -> torch.Tensor:
        """One step from the slots' input buffer: the logits [width, V], the picks left in the input buffer."""
        if self.pending:
            return self.capture_and_step()
        if self.graph is None:
            return self.rows.step_and_pick()
        self.graph.replay()
        return self.logits

    def capture_and_step(self) -> torch.Tensor:
        """Warm up (fla compiles and tunes its kernels on first use), capture, and check the first replay against
        the same step run eagerly; that replay is this step. Whatever fails, and wherever, the step is run again
        eagerly from the state before it."""
        self.pending = False
        rows = self.rows
        before = rows.snapshot()
        stream = None
        try:
            stream = torch.cuda.current_stream()
            side = torch.cuda.Stream()
            side.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(side):
                for _ in range(2):
                    rows.step_and_pick()
                    rows.restore(before)
            torch.cuda.current_stream().wait_stream(side)
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                self.logits = rows.step_and_pick()
            rows.restore(before)
            expected_logits = rows.step_and_pick().clone()
            expected_state = rows.snapshot()[0]
            rows.restore(before)
            graph.replay()
        except Exception as exc:  # noqa: BLE001 - any failure to capture or replay means eager steps, said once
            # torch's graph exit raises in capture_end() before it leaves the capture's stream: the retry and all
            # after it run on the stream they ran on before
            if stream is not None:
                torch.cuda.set_stream(stream)
            cause = first_cause(exc)
            return self._fall_back(before, f"capture failed: {type(cause).__name__}: "
                                           f"{(str(cause).splitlines() or [''])[0][:200]}")
        return self._checked(graph, before, expected_logits, expected_state)

    def _checked(self, graph, before, expected_logits, expected_state) -> torch.Tensor:
        """The first replay's logits if its picks and state equal the eager step's; else an eager retry."""
        *expected_buffers, expected_picks = expected_state
        if not torch.equal(self.rows.ids, expected_picks):
            return self._fall_back(before, "the graph's first step picked other tokens than the eager step")
        differs = _largest_difference([self.logits, *self.rows.buffers], [expected_logits, *expected_buffers])
        if differs > REPLAY_TOLERANCE:
            return self._fall_back(before, f"the graph's first step differed from the eager step by {differs:.3g}")
        self.graph, self.outcome = graph, "captured"
        _OUTCOMES[type(self.rows.model).__name__] = self.outcome
        return self.logits

    def _fall_back(self, before, why: str) -> torch.Tensor:
        """Eager steps from here on, from the state before the capture: this step is run again, eagerly."""
        self.rows.restore(before)
        self.graph, self.outcome = None, f"eager: {why}"
        model = self.rows.model
        _OUTCOMES[type(model).__name__] = self.outcome
        if type(model).__name__ not in _WARNED:
            _WARNED.add(type(model).__name__)
            warnings.warn(f"{type(model).__name__}: decoding runs step by step, without a CUDA graph ({why})",
                          stacklevel=3)
        return self.rows.step_and_pick()


def _largest_difference(got: list[torch.Tensor], expected: list[torch.Tensor]) -> float:
    """The largest difference over the tensors, relative to each one's largest value."""
    worst = 0.0
    for a, b in zip(got, expected, strict=True):
        if not torch.equal(a, b):
            scale = b.double().abs().max().clamp_min(1e-30)
            worst = max(worst, float((a.double() - b.double()).abs().max() / scale))
    return worst
