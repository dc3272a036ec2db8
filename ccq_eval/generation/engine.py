"""The engine: a queue of requests through a batch of ``batch_size`` rows, greedy, one token for every row a step.

Prompts enter through their layout's prefill (layouts.py: packed, separate or padded); the first token comes from
the prefill's logits; each step feeds every running row its newest token; a row that is done (request.StopRule)
leaves the batch at once, and where the layout allows it the free rows are refilled from the queue. A request's
``score`` continuation is teacher-forced from a copy of its row's cache right after its prefill."""

from __future__ import annotations

import math
import statistics
import time
from collections import deque

import torch

from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.request import Request, Result, StopRule, greedy
from ccq_eval.generation.static_rows import StaticRows


def _score(layout, batch, rows: list[int], logits: torch.Tensor, continuations: list[tuple[int, ...]]) -> list[float]:
    """Mean NLL per token of each row's continuation, teacher-forced one token a step from a copy of its cache
    (``logits``: the rows' next-token logits after their prompts)."""
    copy = layout.copy(batch, rows)
    width = max(len(c) for c in continuations)
    step_logits = [logits[rows]]
    for j in range(width - 1):  # right padding: a row past its continuation feeds its last token, never scored
        step_logits.append(layout.step(copy, [c[min(j, len(c) - 1)] for c in continuations]))
    logp = torch.log_softmax(torch.stack(step_logits, dim=1).double(), dim=-1)
    return [-float(logp[i, torch.arange(len(c)), torch.tensor(c)].mean()) for i, c in enumerate(continuations)]


class _Run:
    """One call's state: the requests, their results and stop rules, the running rows (request indices)."""

    def __init__(self, layout, tokenizer, requests: list[Request], batch_size: int):
        self.layout = layout
        self.requests, self.batch_size = requests, max(1, batch_size)
        self.results = [Result() for _ in requests]
        self.rules = [StopRule(r, tokenizer) for r in requests]
        self.queue, self.running, self.batch = deque(range(len(requests))), [], None

    def enter(self, free: int) -> tuple[list[int], object, list[int]]:
        """Prefill up to ``free`` prompts from the queue, score their continuations and take their first tokens:
        (the entering requests, their batch, the rows of those still running)."""
        entering = [self.queue.popleft() for _ in range(min(free, len(self.queue)))]
        batch, logits = self.layout.prefill([self.requests[i].prompt for i in entering])
        scored = [row for row, i in enumerate(entering) if self.requests[i].score]
        if scored:
            nlls = _score(self.layout, batch, scored, logits, [self.requests[entering[r]].score for r in scored])
            for row, nll in zip(scored, nlls):
                self.results[entering[row]].continuation_nll = nll
        return entering, batch, self.append(entering, logits)

    def admit(self) -> None:
        """Prefill the next prompts into the free rows; each takes its first token there."""
        free = self.batch_size - len(self.running)
        if not self.queue or free <= 0 or (self.running and not self.layout.refills):
            return
        entering, batch, rows = self.enter(free)
        if not rows:
            return
        if len(rows) < len(entering):
            self.layout.keep(batch, rows)
        still = [entering[row] for row in rows]
        if not self.running:
            self.batch, self.running = batch, still
        else:
            self.layout.join(self.batch, batch)
            self.running = self.running + still

    def append(self, requests: list[int], logits: torch.Tensor) -> list[int]:
        """Append each request's next token (``logits``' rows, in order); the positions of those not done."""
        picked = greedy(logits, [self.rules[i].banned(len(self.results[i].tokens)) for i in requests])
        keep = []
        for row, (i, token) in enumerate(zip(requests, picked)):
            self.results[i].tokens.append(token)
            if not self.rules[i].done(self.results[i]):
                keep.append(row)
        return keep

    def advance(self, rows: list[int], batch, logits: torch.Tensor) -> list[int]:
        """Append each row's next token; drop the rows that are done from ``batch``; the request indices kept."""
        keep = self.append(rows, logits)
        if keep and len(keep) < len(rows):
            self.layout.keep(batch, keep)
        return [rows[row] for row in keep]

    def step(self) -> None:
        logits = self.layout.step(self.batch, [self.results[i].tokens[-1] for i in self.running])
        self.running = self.advance(self.running, self.batch, logits)

    def __call__(self) -> list[Result]:
        while self.queue or self.running:
            self.admit()
            if self.running:
                self.step()
        return self.results


# A prefill's fixed cost on CUDA (its launches and host work, beside the tokens' own compute), in decoding steps of a
# full batch, until the run has measured its own (generation/refill_cost.py): about 3 ms against a 4 ms step of a 1.3B
# model at 64 rows (an estimate; no GPU has timed it)
PREFILL_OVERHEAD_STEPS = 0.75
STEPS_BEFORE_MEASURING = 4  # step periods the fixed slots time before their refill cost is measured


def refill_threshold(width: int, requests: list[Request], on_cuda: bool,
                     overhead_steps: float = PREFILL_OVERHEAD_STEPS) -> int:
    """How many slots must be free before a refill prefills new prompts (sooner when the queue cannot fill more).

    A refill stalls every running row for its prefill. Its token compute is the same whether it admits one prompt or
    k, but its fixed cost o is paid once per refill; waiting for k free slots leaves them idle meanwhile. With W slots
    freeing at about W / G a step (G tokens a request), the i-th freed slot waits (k - i) G / W steps, about
    k^2 G / (2 W) slot-steps a refill, against W o / s slot-steps of stall saved per refill avoided (s a step's time).
    Per prompt admitted the sum is least at k = W sqrt(2 (o / s) / G). G is taken as the requests' mean token budget.
    On the CPU there is no fixed cost to share (o = 0): a free slot is refilled at once."""
    if not on_cuda or not requests:
        return 1
    budget = sum(r.max_new_tokens for r in requests) / len(requests)
    return max(1, min(width, round(width * math.sqrt(2 * overhead_steps / max(budget, 1)))))


class _StaticRun(_Run):
    """The same queue through ``batch_size`` fixed slots (fewer where fewer requests are given; static_rows.py): a
    finished row frees its slot, a new prompt's state is copied into it, and every step runs the full width, as a
    CUDA graph where one was captured.

    The GPU never waits for the host: each step picks its tokens on the device, into the next step's input, and the
    host reads step t's picks (copied without blocking) only after step t + 1 is launched. A row that stopped at
    step t has its t + 1 pick dropped; its slot is refilled once ``refill_threshold`` slots are free."""

    def __init__(self, layout, tokenizer, requests: list[Request], batch_size: int, capture: bool):
        super().__init__(layout, tokenizer, requests, batch_size)
        self.batch_size = max(1, min(self.batch_size, len(requests)))  # no slot that no request can ever fill
        self.capture, self.rows, self.slots = capture, None, [None] * self.batch_size  # slot -> request
        self.finished = [False] * len(requests)
        self.on_cuda = layout.model.device.type == "cuda"
        self.threshold = refill_threshold(self.batch_size, requests, self.on_cuda)
        self.periods: list[float] = []  # the host's period between reading one step's picks and the next's
        self.read_at: float | None = None
        self.cost = None  # the refill cost measured on this model (refill_cost.py), on CUDA
        self.banning: list[frozenset[int]] = [frozenset()] * self.batch_size  # each slot's ban as the device has it
        self.pending: tuple[int, list] | None = None  # the launched step whose picks are not read yet

    def admit(self) -> None:
        free = [slot for slot, i in enumerate(self.slots) if i is None]
        if not self.queue or not free:
            return
        self.read_at = None  # a refill's prefill is not a step's period
        entering, batch, rows = self.enter(len(free))
        for row, i in enumerate(entering):
            self.finished[i] = row not in rows
        if not rows:
            return
        if self.rows is None:
            self.rows = StaticRows(self.layout.model, batch.cache, len(entering), self.batch_size, self.capture)
            free = list(range(len(entering)))
        placed = free[:len(rows)]
        self.rows.place(placed, batch.cache, rows)
        self.rows.set_tokens(placed, [self.results[entering[row]].tokens[-1] for row in rows])
        for slot, row in zip(placed, rows):
            self.slots[slot] = entering[row]
        self.running = [i for i in self.slots if i is not None]

    def measure_refills(self) -> None:
        """On CUDA, once the slots have stepped a few times: the threshold from this model's own refill cost."""
        if self.on_cuda and self.cost is None and len(self.periods) >= STEPS_BEFORE_MEASURING:
            from ccq_eval.generation import refill_cost

            self.cost = refill_cost.measured(self.layout, statistics.median(self.periods))
            self.threshold = refill_threshold(self.batch_size, self.requests, True, self.cost.overhead_steps)

    def wants_refill(self) -> bool:
        self.measure_refills()
        free = sum(i is None for i in self.slots)
        return bool(self.queue) and free > 0 and (free >= self.threshold or free >= len(self.queue) or not self.running)

    def launch(self) -> tuple[int, list]:
        """Launch a step over every slot; (its handle, the request each slot held)."""
        ahead = {i for i in self.pending[1] if i is not None} if self.pending else set()
        for slot, i in enumerate(self.slots):
            ban = frozenset() if i is None else self.rules[i].banned(len(self.results[i].tokens) + (i in ahead))
            if ban != self.banning[slot]:
                self.rows.ban(slot, ban)
                self.banning[slot] = ban
        return self.rows.advance(), list(self.slots)

    def collect(self, launched: tuple[int, list]) -> None:
        """Append a launched step's picks to the requests still running; free the slots of those now done."""
        turn, held = launched
        picks = self.rows.picks(turn)
        now = time.perf_counter()
        if self.read_at is not None:
            self.periods.append(now - self.read_at)
        self.read_at = now
        for slot, (i, token) in enumerate(zip(held, picks)):
            if i is None or self.finished[i]:
                continue  # an idle slot, or a row that stopped a step before: its pick is dropped
            self.results[i].tokens.append(token)
            if self.rules[i].done(self.results[i]):
                self.finished[i] = True
                if self.slots[slot] == i:
                    self.slots[slot] = None
        self.running = [i for i in self.slots if i is not None]

    def __call__(self) -> list[Result]:
        while self.queue or self.running or self.pending:
            if not self.running and not self.pending:
                self.admit()
                continue
            launched = self.launch() if self.running else None
            if self.pending:
                self.collect(self.pending)
            self.pending = launched
            if self.wants_refill():
                self.admit()
        return self.results


class _EagerSteps:
    """The layout's own step over a batch that shrinks, never captured (``outcome`` says why)."""

    def __init__(self, layout, batch):
        self.layout, self.batch = layout, batch
        self.outcome = f"eager: {eager_reason(layout)}"

    def __call__(self, tokens: list[int]) -> torch.Tensor:
        return self.layout.step(self.batch, tokens)


def eager_reason(layout) -> str | None:
    """Why decoding does not run in fixed slots (``_StaticRun``, where a CUDA graph can replay it); None where it
    does: on CUDA, for the layouts whose rows are independent."""
    if layout.model.device.type != "cuda":
        return "not on CUDA"
    return None if layout.refills else f"the {layout.name} layout's step changes shape as it grows"


def fixed_slots(layout) -> bool:
    return eager_reason(layout) is None


def stepper(layout, batch, rows: int):
    """A decoding step over a prefilled batch as ``generate`` runs it: tokens -> logits; its ``outcome`` says whether
    it runs as a CUDA graph (``captured``, once the first call returned) or eagerly, and why. On CUDA, for the layouts
    whose rows are independent, fixed slots and a CUDA graph captured on the first call (time from the second)."""
    if fixed_slots(layout):
        return StaticRows(layout.model, batch.cache, rows, rows, capture=True)  # fixed slots: on CUDA
    return _EagerSteps(layout, batch)


def generate(model, tokenizer, requests: list[Request], batch_size: int = 1, static: bool | None = None) -> list[Result]:
    """Greedy continuations of every request, in the requests' order (they run in it: give them longest first).

    static: fixed slots, as a CUDA graph needs (``_StaticRun``); by default on CUDA for the layouts whose rows are
    independent, where the decoding step is then captured. Elsewhere rows leave the batch and it shrinks."""
    layout = layout_for(model)
    on_cuda = model.device.type == "cuda"
    static = fixed_slots(layout) if static is None else static and layout.refills
    with torch.no_grad():
        if static:
            return _StaticRun(layout, tokenizer, requests, batch_size, capture=on_cuda)()
        return _Run(layout, tokenizer, requests, batch_size)()
