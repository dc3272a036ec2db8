"""Language modelling and zero-shot commonsense: lm-eval's own tasks, 0-shot, unchanged.

data.py (the tasks' datasets offline: local records or the HF cache; fetch), driver.py, protocol.py,
ingest.py (lm-eval's own results files into lm units), tables.py. Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, Suite
from ccq_eval.suites.lm.protocol import WINDOW


class LmSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.lm.driver import LmDriver

        return LmDriver(inputs)

    def lm_eval_units(self, task, results):
        from ccq_eval.suites.lm.ingest import lm_unit

        read = lm_unit(task, results)
        return [read] if isinstance(read, tuple) else read  # or why it is left out (a Refused one is refused)


def _fetch_names():
    from ccq_eval.suites.lm.data import METRICS

    return tuple(METRICS)


def _fetch(names):
    from ccq_eval.suites.lm.data import fetch

    return fetch(names)


SUITE = LmSuite(
    name="lm",
    tasks=("wikitext", "lambada_openai", "piqa", "hellaswag", "winogrande", "arc_easy", "arc_challenge",
           "social_iqa", "boolq"),
    default_lengths=(WINDOW,),
    default_samples=None,
    display={"wikitext": "Wiki", "lambada_openai": "LMB", "piqa": "PIQA", "hellaswag": "Hella",
             "winogrande": "Wino", "arc_easy": "ARC-e", "arc_challenge": "ARC-c", "social_iqa": "SIQA",
             "boolq": "BoolQ", "swde": "SWDE", "fda": "FDA", "squad_completion": "SQuAD"},
    # Based / JRT's real-world recall (lm-eval's swde, fda, squad_completion): --tasks swde,fda,squad_completion
    extra_tasks=("swde", "fda", "squad_completion"),
    fixed_lengths=True,
    any_lm_eval_task=True,
    fetcher=DataFetch(_fetch_names, _fetch),
    length_means=f"lm-eval's own window ({WINDOW}; --lengths is ignored)",
    samples_mean="examples per task",
    not_rescorable=("lm-eval's zero-shot tasks score the model's likelihood of each choice, which the store does not "
                    "keep; rerun the model"),
)
