"""The engine: a queue of requests through a batch of ``batch_size`` rows, greedy, one token for every row a step.

Prompts enter through their layout's prefill (layouts.py: packed, separate or padded); the first token comes from
the prefill's logits; each step feeds every running row its newest token; a row that is done (request.StopRule)
leaves the batch at once, and where the layout allows it the free rows are refilled from the queue. A request's
``score`` continuation is teacher-forced from a copy of its row's cache right after its prefill."""

from __future__ import annotations

from collections import deque

import torch

from ccq_eval.generation.layouts import layout_for
from ccq_eval.generation.request import Request, Result, StopRule


def _pick(logits: torch.Tensor, banned: list[frozenset[int]]) -> list[int]:
    """The greedy next token of each row, a row's banned ids excluded."""
    if any(banned):
        logits = logits.clone()
        for row, ids in enumerate(banned):
            if ids:
                logits[row, list(ids)] = float("-inf")
    return logits.argmax(-1).tolist()


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

    def __init__(self, model, tokenizer, requests: list[Request], batch_size: int):
        self.layout = layout_for(model)
        self.requests, self.batch_size = requests, max(1, batch_size)
        self.results = [Result() for _ in requests]
        self.rules = [StopRule(r, tokenizer) for r in requests]
        self.queue, self.running, self.batch = deque(range(len(requests))), [], None

    def admit(self) -> None:
        """Prefill the next prompts into the free rows; each takes its first token there."""
        free = self.batch_size - len(self.running)
        if not self.queue or free <= 0 or (self.running and not self.layout.refills):
            return
        entering = [self.queue.popleft() for _ in range(min(free, len(self.queue)))]
        batch, logits = self.layout.prefill([self.requests[i].prompt for i in entering])
        scored = [row for row, i in enumerate(entering) if self.requests[i].score]
        if scored:
            nlls = _score(self.layout, batch, scored, logits, [self.requests[entering[r]].score for r in scored])
            for row, nll in zip(scored, nlls):
                self.results[entering[row]].continuation_nll = nll
        still = self.advance(entering, batch, logits)
        if not still:
            return
        if not self.running:
            self.batch, self.running = batch, still
        else:
            self.layout.join(self.batch, batch)
            self.running = self.running + still

    def advance(self, rows: list[int], batch, logits: torch.Tensor) -> list[int]:
        """Append each row's next token; drop the rows that are done from ``batch``; the request indices kept."""
        picked = _pick(logits, [self.rules[i].banned(len(self.results[i].tokens)) for i in rows])
        keep = []
        for row, (i, token) in enumerate(zip(rows, picked)):
            self.results[i].tokens.append(token)
            if not self.rules[i].done(self.results[i]):
                keep.append(row)
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


def generate(model, tokenizer, requests: list[Request], batch_size: int = 1) -> list[Result]:
    """Greedy continuations of every request, in the requests' order (they run in it: give them longest first)."""
    with torch.no_grad():
        return _Run(model, tokenizer, requests, batch_size)()
