"""Language modelling and zero-shot commonsense: lm-eval's own tasks, 0-shot, unchanged.

data.py (the tasks' datasets offline: local records or the HF cache; fetch), driver.py,
tables.py. Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import Suite


class LmSuite(Suite):
    def driver(self, plan):
        from ccq_eval.suites.lm.driver import LmDriver

        return LmDriver(plan)

    def tables(self):
        from ccq_eval.suites.lm import tables

        return {"lm": tables.lm_table}

    def fetchable(self):
        from ccq_eval.suites.lm.data import METRICS

        return tuple(METRICS)

    def fetch(self, names):
        from ccq_eval.suites.lm.data import fetch

        return fetch(names)


SUITE = LmSuite(
    name="lm",
    tasks=("wikitext", "lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge",
           "social_iqa", "boolq"),
    default_lengths=(2048,),
    default_samples=None,
    display={"wikitext": "Wiki", "lambada_openai": "LMB", "piqa": "PIQA", "hellaswag": "Hella",
             "winogrande": "Wino", "arc_easy": "ARC-e", "arc_challenge": "ARC-c", "social_iqa": "SIQA",
             "boolq": "BoolQ"},
    fixed_lengths=True,
    fetches_data=True,
)
