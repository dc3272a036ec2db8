"""Cost: prefill and decoding throughput, peak memory and the cache's size against context length, for any
checkpoint (the paper's claim that CCQ keeps a constant state and the linear-time read). Everything only this
suite knows lives in this folder: measure.py (timing, memory, cache bytes), analytic.py (the cache size counted
from the config), driver.py, tables.py. Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import Suite


class EfficiencySuite(Suite):
    def driver(self, plan):
        from ccq_eval.suites.efficiency.driver import EfficiencyDriver

        return EfficiencyDriver(plan)

    def tables(self):
        from ccq_eval.suites.efficiency import tables

        return {"efficiency": tables.cost_table}

    def figures(self):
        from ccq_eval.suites.efficiency import tables

        return {"efficiency": tables.cost_figure}


SUITE = EfficiencySuite(
    name="efficiency",
    tasks=("efficiency_cost",),
    default_lengths=(1024, 2048, 4096, 8192, 16384, 20480),
    default_samples=3,  # timed repeats per length (after one warm-up); the median is stored
    display={"efficiency_cost": "cost"},
    in_all=False,  # timings beside other suites' work would measure the machine's load, not the model
)
