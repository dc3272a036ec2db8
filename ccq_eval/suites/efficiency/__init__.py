"""Cost: prefill and decoding throughput, peak memory and the cache's size against context length, for any
checkpoint (the paper's claim that CCQ keeps a constant state and the linear-time read). Everything only this
suite knows lives in this folder: measure.py (timing, memory, cache bytes), driver.py, tables.py, figures.py; the
cache counted from the config is each family's formula (``Family.cache_bytes``), and retrieval accuracy against the
state's bytes is a table across suites (catalogue/recall_state.py). Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import Suite


class EfficiencySuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.efficiency.driver import EfficiencyDriver

        return EfficiencyDriver(inputs)



SUITE = EfficiencySuite(
    name="efficiency",
    tasks=("efficiency_cost",),
    default_lengths=(1024, 2048, 4096, 8192, 16384, 20480),
    default_samples=3,  # timed repeats per length (after one warm-up); the median is stored
    display={"efficiency_cost": "cost"},
    in_all=False,
    length_means="prompt of L tokens, then decoding",
    samples_mean="timed repeats per length",  # timings beside other suites' work would measure the machine's load, not the model
    not_rescorable="its numbers are timings and memory, measured, not scored",
)
