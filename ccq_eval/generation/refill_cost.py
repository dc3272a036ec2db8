"""What a refill costs on the run's own model, measured once per process: a prefill's fixed cost o (its launches and
host work, beside the tokens' own compute) over a decoding step's time s, the ratio ``engine.refill_threshold``
needs. o from two small prefills through the model's own layout, one prompt and eight of the same length:
``t(n) = o + n c`` gives ``o = (8 t(1) - t(8)) / 7``; s from the fixed slots' own cadence, the host's period between
reading one step's picks and the next (the GPU runs ahead, so the period is the step). Recorded for provenance."""

from __future__ import annotations

import statistics
import time
from dataclasses import asdict, dataclass

import torch

PROBE_TOKENS = 32  # short prompts: the fixed cost, not the tokens' compute, is what two sizes tell apart
_MEASURED: dict[str, "RefillCost"] = {}  # model class -> its cost, once per process


@dataclass(frozen=True)
class RefillCost:
    prefill_fixed_ms: float
    step_ms: float

    @property
    def overhead_steps(self) -> float:
        return self.prefill_fixed_ms / max(self.step_ms, 1e-6)


def _seconds(fn, device) -> float:
    times = []
    for _ in range(3):
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        start = time.perf_counter()
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def prefill_fixed_seconds(layout) -> float:
    """A prefill's cost that does not grow with its prompts: from one prompt and eight of ``PROBE_TOKENS`` each."""
    prompt = tuple(range(1, PROBE_TOKENS + 1))
    device = layout.model.device
    one = _seconds(lambda: layout.prefill([prompt]), device)
    eight = _seconds(lambda: layout.prefill([prompt] * 8), device)
    return max(0.0, (8 * one - eight) / 7)


def measured(layout, step_seconds: float) -> RefillCost:
    """This model's refill cost (the prefill probed the first time in the process), with the step time given."""
    name = type(layout.model).__name__
    if name not in _MEASURED:
        _MEASURED[name] = RefillCost(1000 * prefill_fixed_seconds(layout), 1000 * step_seconds)
    return _MEASURED[name]


def recorded() -> dict[str, dict]:
    """Model class -> the refill cost measured in this process and the ratio it gives (a run's provenance)."""
    return {name: {**asdict(cost), "overhead_steps": round(cost.overhead_steps, 3)} for name, cost in _MEASURED.items()}


def forget() -> None:
    _MEASURED.clear()
