"""What one efficiency unit measures, on the model as loaded: a prefill of L random tokens (the generation engine's
prefill: the cache on, logits for the last position only), then N single-token decoding steps from that cache (the
engine's step); the
cache's bytes as held by the model's own cache object after the prefill; the peak memory of the prefill.

CUDA: timed with events after synchronisation, peak from ``max_memory_allocated`` above what was allocated
before. CPU: ``perf_counter``, peak as the growth of the process's peak resident set (Linux ``VmHWM``, reset
through ``/proc/self/clear_refs``; none where that cannot be reset)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import torch


@dataclass(frozen=True)
class Repeat:
    prefill_s: float
    decode_s: float
    peak_bytes: int | None
    cache_bytes: int
    graph: str = ""  # how the decoding steps ran: "captured" (a CUDA graph) or "eager: <why>"


def hardware(device: torch.device) -> str:
    """The machine a number belongs to (part of a unit's identity): GPU name and capability, or the CPU model."""
    from ccq_eval.machine import device_record

    record = device_record(device)
    if device.type == "cuda":
        return f"{record['name']} ({record['capability']})"
    return f"{record['name']} ({torch.get_num_threads()} torch threads)"


def cache_bytes(cache) -> int:
    """Bytes of every tensor the cache object holds (fla's layer states, transformers' key/value layers, CCQ's
    statistics), each counted once, as its logical size (a view into a larger buffer counts what it shows)."""
    seen_objects, seen_tensors, total = set(), set(), 0
    stack = [cache]
    while stack:
        obj = stack.pop()
        if id(obj) in seen_objects or obj is None or isinstance(obj, (str, bytes, int, float, bool, type)):
            continue
        seen_objects.add(id(obj))
        if isinstance(obj, torch.Tensor):
            key = (obj.data_ptr(), tuple(obj.shape), obj.dtype)
            if key not in seen_tensors:
                seen_tensors.add(key)
                total += obj.numel() * obj.element_size()
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, tuple)):
            stack.extend(obj)
        elif hasattr(obj, "__dict__"):
            stack.extend(vars(obj).values())
    return total


class _Clock:
    def __init__(self, device: torch.device):
        self.device = device

    def now(self):
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            event = torch.cuda.Event(enable_timing=True)
            event.record()
            return event
        return time.perf_counter()

    def seconds(self, start, end) -> float:
        if self.device.type == "cuda":
            end.synchronize()
            return start.elapsed_time(end) / 1000
        return end - start


def _resident_kb(field: str) -> int | None:
    status = Path("/proc/self/status")
    if not status.is_file():
        return None
    for line in status.read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return None


def _return_freed_memory() -> None:
    """glibc keeps freed heap pages mapped for reuse; malloc_trim hands them back, so the resident set measures
    what the next forward allocates. Nothing to do without glibc."""
    import ctypes
    import ctypes.util

    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name) if name else None
        if libc is not None and hasattr(libc, "malloc_trim"):
            libc.malloc_trim(0)
    except OSError:
        pass


class _PeakMemory:
    """Peak memory above the level at start, over what runs between start() and stop()."""

    def __init__(self, device: torch.device):
        self.device = device

    def start(self) -> None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            torch.cuda.reset_peak_memory_stats(self.device)
            self.base = torch.cuda.memory_allocated(self.device)
            return
        _return_freed_memory()  # else the prefill reuses pages an earlier one left and its peak hides
        try:
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current resident set
            self.base = _resident_kb("VmRSS")
        except OSError:
            self.base = None

    def stop(self) -> int | None:
        if self.device.type == "cuda":
            torch.cuda.synchronize(self.device)
            return torch.cuda.max_memory_allocated(self.device) - self.base
        peak = _resident_kb("VmHWM")
        return None if self.base is None or peak is None else max(0, peak - self.base) * 1024


@torch.no_grad()
def measure_once(model, ids: torch.Tensor, decode_steps: int) -> Repeat:
    """One prefill of ``ids`` ([B, L]) and ``decode_steps`` greedy steps after it, through the generation engine's
    own prefill and step (generation/layouts.py: packed, separate or padded, as the suites generate; on CUDA fixed
    slots and a CUDA graph where the layout allows one, captured in an untimed first step, and stepped as the engine
    steps them, pipelined). After a capture an untimed prefill returns torch's cache its blocks."""
    from ccq_eval.generation.engine import stepper
    from ccq_eval.generation.layouts import layout_for
    from ccq_eval.generation.static_rows import StaticRows

    layout, prompts = layout_for(model), [tuple(row) for row in ids.tolist()]
    device = ids.device
    clock, peak = _Clock(device), _PeakMemory(device)
    peak.start()
    start = clock.now()
    batch, logits = layout.prefill(prompts)
    end = clock.now()
    peak_bytes = peak.stop()
    prefill_s = clock.seconds(start, end)
    held = cache_bytes(batch.cache)
    step = stepper(layout, batch, len(prompts))
    decode = _pipelined if isinstance(step, StaticRows) else _stepped
    decode_s = decode(step, logits.argmax(-1).tolist(), decode_steps, clock)
    if step.outcome == "captured":  # the capture emptied torch's cache: the next timed prefill must not pay for it
        layout.prefill(prompts)
    return Repeat(prefill_s, decode_s, peak_bytes, held, step.outcome)


def _stepped(step, first: list[int], steps: int, clock) -> float:
    """Seconds of ``steps`` eager steps, each one's greedy picks read on the host (the engine's eager path)."""
    tokens = step(first).argmax(-1).tolist()
    start = clock.now()
    for _ in range(steps):
        tokens = step(tokens).argmax(-1).tolist()
    return clock.seconds(start, clock.now())


def _pipelined(rows: StaticRows, first: list[int], steps: int, clock) -> float:
    """Seconds of ``steps`` fixed-slot steps as the engine runs them: picks made on the device, step t's read on the
    host after step t + 1 is launched; the first step (the capture, on CUDA) untimed."""
    rows.set_tokens(list(range(len(first))), first)
    rows.picks(rows.advance())
    start = clock.now()
    previous = rows.advance()
    for _ in range(steps - 1):
        turn = rows.advance()
        rows.picks(previous)
        previous = turn
    rows.picks(previous)
    return clock.seconds(start, clock.now())
