"""The efficiency suite's driver: per context length, a warm-up then ``--samples`` timed repeats of a prefill
and N decoding steps on random token ids; the median of each measure is stored, every repeat in the settings. A
measurement: the driver overrides evaluate rather than the three stages."""

from __future__ import annotations

import statistics
import torch

from ccq_eval.families import cache_bytes
from ccq_eval.suites.efficiency.measure import hardware, measure_once
from ccq_eval.suites.driver import Driver
from ccq_eval.suites.outcomes import Metric, UnitOutcome

DECODE_STEPS = 32  # decoding throughput: tokens/s over this many steps after the prefill
SEED = 0  # the random prompt's ids: what the tokens are does not change a forward's cost


class EfficiencyDriver(Driver):
    def max_length(self) -> int:
        return max(self.inputs.lengths) + DECODE_STEPS

    def unit_settings(self, task: str, length: int, model) -> tuple[dict, dict]:
        """The machine the numbers come from is part of the unit: a number from another machine or thread count is
        another unit."""
        device = next(model.model.parameters()).device
        machine = {"hardware": hardware(device), "threads": torch.get_num_threads() if device.type == "cpu" else None}
        return {"decode_steps": DECODE_STEPS, "warmup": 1, **machine}, {"prompt": "uniform random ids", "seed": SEED}

    @staticmethod
    def _prompt(evaluand, length: int) -> torch.Tensor:
        model = evaluand.model
        vocab = min(model.config.vocab_size, len(evaluand.tokenizer))
        generator = torch.Generator().manual_seed(SEED + length)
        ids = torch.randint(0, vocab, (1, length), generator=generator)
        return ids.to(next(model.parameters()).device)

    def evaluate(self, unit, model) -> UnitOutcome:
        evaluand, model = model, model.model
        ids = self._prompt(evaluand, unit.context_length)
        measure_once(model, ids, DECODE_STEPS)  # warm-up: kernels compiled and tuned, buffers grown
        repeats = [measure_once(model, ids, DECODE_STEPS) for _ in range(self.inputs.samples)]
        provenance = evaluand.provenance
        analytic = cache_bytes(provenance["config"], unit.context_length, provenance["dtype"])
        prefill = [unit.context_length / r.prefill_s for r in repeats]
        decode = [DECODE_STEPS / r.decode_s for r in repeats]
        n = len(repeats)
        metrics = [Metric("prefill_tokens_per_s", statistics.median(prefill), n=n, is_primary=True),
                   Metric("decode_tokens_per_s", statistics.median(decode), n=n),
                   Metric("cache_bytes", float(repeats[-1].cache_bytes), n=n, higher_is_better=False)]
        peaks = [r.peak_bytes for r in repeats if r.peak_bytes is not None]
        if peaks:
            metrics.append(Metric("peak_memory_bytes", float(statistics.median(peaks)), n=len(peaks),
                                  higher_is_better=False))
        if analytic is not None:
            metrics.append(Metric("cache_bytes_analytic", float(analytic), n=1, higher_is_better=False))
        settings = {"prefill_s": [r.prefill_s for r in repeats], "decode_s": [r.decode_s for r in repeats],
                    "peak_bytes": [r.peak_bytes for r in repeats],
                    "peak_memory": "cuda max_memory_allocated" if ids.device.type == "cuda" else "peak RSS growth"}
        return UnitOutcome(status="complete", metrics=metrics, settings=settings)
