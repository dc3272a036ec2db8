"""A batch of fixed width whose cache lives in fixed buffers, for the independent layouts (packed, separate): the
shape a CUDA graph of the decoding step needs.

A row is a slot. A finished row frees its slot and keeps being stepped (its tokens are ignored) until a new prompt's
state is copied into it; the width, the buffers and their addresses never change. A step reads the cache from the
buffers and writes the new states into them: the recurrent states in place (ops/in_place.py), the small
tensors a layer returns anew (a convolution window, CCQ's mean) copied home, so on CUDA the whole step is captured
once as a CUDA graph and replayed.

How a step runs (captured and checked, or eager) is step_graph.py's ``CheckedGraph``; on any other device than CUDA the
same buffers are stepped eagerly (what the CPU tests check against the reference)."""

from __future__ import annotations

import torch

from ccq_eval.generation.cache_rows import cache_leaves, copy_rows, leaves, rebuild
from ccq_eval.generation.step_graph import CheckedGraph
from ccq_eval.ops.in_place import states_written_in_place


class StaticRows:
    """``width`` slots over one model's cache, seeded by the first prefill's rows (repeated to fill the width)."""

    def __init__(self, model, cache, rows: int, width: int, capture: bool):
        self.model, self.width = model, width
        self.cache = copy_rows(cache, [r % rows for r in range(width)]) if rows != width else cache
        self.buffers = cache_leaves(self.cache)
        # each layer's state as it sits in the buffers: fla's layers fill a cache's state dicts in place, so a forward
        # that stops part-way leaves some layers bound to tensors of its own (``_bind_home`` undoes that)
        home = iter(self.buffers)
        self.home_states = [rebuild(layer.state, home) for layer in self.cache.layers]
        self._bind_home()
        # the step's input tokens; the captured step writes its greedy picks into it, the next step's input
        self.ids = torch.zeros((width, 1), dtype=torch.long, device=model.device)
        # token ids a slot may not pick (a stop token before a request's min_new_tokens), set by the host between steps
        self.banned = torch.zeros((width, _vocabulary(model)), dtype=torch.bool, device=model.device)
        # two host buffers the picks are copied to without blocking (pinned on CUDA): step t's are read while t + 1 runs
        pinned = model.device.type == "cuda"
        self._host = [torch.zeros(width, dtype=torch.long, pin_memory=pinned) for _ in range(2)]
        self._copied = [torch.cuda.Event() if pinned else None for _ in range(2)]
        self._turn = 0
        self.stepping = CheckedGraph(self, capture)  # capture: on CUDA (the engine decides)

    @property
    def outcome(self) -> str | None:
        """How the slots' steps ran: ``captured``, ``eager: <why>``, or None before the first step."""
        return self.stepping.outcome

    def place(self, slots: list[int], cache, rows: list[int]) -> None:
        """Copy rows of another cache of the same model (a new prefill) into these slots."""
        incoming = cache_leaves(cache)
        index = torch.tensor(rows, device=self.ids.device)
        at = torch.tensor(slots, device=self.ids.device)
        for buffer, new in zip(self.buffers, incoming, strict=True):
            buffer.index_copy_(0, at, new.index_select(0, index).to(buffer.dtype))

    def _bind_home(self) -> None:
        """Every layer's state read from and written to the fixed buffers again."""
        for layer, state in zip(self.cache.layers, self.home_states, strict=True):
            layer.state = rebuild(state, iter(leaves(state)))

    def _run_eager(self) -> torch.Tensor:
        """One step from the buffers, the new states written into them; the logits [width, V]. The recurrent states
        are updated where they lie (ops/in_place.py); what a layer returns as a new tensor (a convolution's
        window, CCQ's mean and count: small) is copied back."""
        with states_written_in_place(self.model):
            out = self.model(self.ids, past_key_values=self.cache, use_cache=True, logits_to_keep=1)
        self.cache = out.past_key_values
        new = cache_leaves(self.cache)
        if len(new) != len(self.buffers):
            raise RuntimeError(f"the cache's states changed shape in a step ({len(new)} tensors, "
                               f"{len(self.buffers)} buffers)")
        for buffer, tensor in zip(self.buffers, new):
            if tensor.data_ptr() != buffer.data_ptr():
                buffer.copy_(tensor)
        self._bind_home()
        return out.logits[:, -1]

    def step_and_pick(self) -> torch.Tensor:
        """What the graph captures: one step, then each slot's greedy pick (its banned ids excluded) written into the
        input buffer, where the next step reads it. The logits [width, V]."""
        logits = self._run_eager()
        self.ids.copy_(logits.masked_fill(self.banned, float("-inf")).argmax(-1, keepdim=True))
        return logits

    def step(self, tokens: list[int]) -> torch.Tensor:
        """Feed each slot its token; the slots' next-token logits [width, V]."""
        self.ids.copy_(torch.tensor(tokens, dtype=torch.long)[:, None])
        return self.stepping.step()

    __call__ = step

    def set_tokens(self, slots: list[int], tokens: list[int]) -> None:
        """The next step feeds these slots these tokens (a new prompt's first token, picked from its prefill)."""
        self.ids[torch.tensor(slots, device=self.ids.device), 0] = torch.tensor(tokens, device=self.ids.device)

    def ban(self, slot: int, ids: frozenset[int]) -> None:
        """The slot's picks exclude these ids until the next call for the slot."""
        self.banned[slot] = False
        if ids:
            self.banned[slot, torch.tensor(sorted(ids), device=self.banned.device)] = True

    def advance(self) -> int:
        """One step from the tokens in the input buffer, its picks left there for the next step and copied to the host
        without waiting; the handle ``picks`` reads them with."""
        self.stepping.step()
        turn, self._turn = self._turn, 1 - self._turn
        self._host[turn].copy_(self.ids[:, 0], non_blocking=True)
        if self._copied[turn] is not None:
            self._copied[turn].record()
        return turn

    def picks(self, turn: int) -> list[int]:
        """The tokens picked by the step ``turn`` came from (waits for that step alone, not for any launched after)."""
        if self._copied[turn] is not None:
            self._copied[turn].synchronize()
        return self._host[turn].tolist()

    def snapshot(self) -> tuple[list[torch.Tensor], list[int]]:
        """The buffers' and input's values and each layer's token count (fla's layers count the tokens they have
        seen)."""
        return ([b.clone() for b in (*self.buffers, self.ids)],
                [getattr(layer, "_seen_tokens", 0) for layer in self.cache.layers])

    def restore(self, saved: tuple[list[torch.Tensor], list[int]]) -> None:
        """Back to a snapshot: the states bound to the buffers again and refilled, the token counts reset."""
        self._bind_home()
        values, seen = saved
        for buffer, value in zip((*self.buffers, self.ids), values, strict=True):
            buffer.copy_(value)
        for layer, count in zip(self.cache.layers, seen):
            if hasattr(layer, "_seen_tokens"):
                layer._seen_tokens = count


def _vocabulary(model) -> int:
    """The width of the model's logits."""
    head = model.get_output_embeddings()
    return head.weight.shape[0] if head is not None else model.config.vocab_size
