"""RULER's multi-needle NIAH tasks (multi-key, multi-value, multi-query): S-NIAH's machinery over this suite's
generator. data.py (the generator), driver.py (units -> outcomes), scoring.py and plugin.py (what tasks/multi_niah
calls), tables.py (the accuracy table). Importing this module imports none of the heavy ones.
"""

from __future__ import annotations

from ccq_eval.suites.base import SampleView, SeedMetric
from ccq_eval.suites.sniah import HAYSTACK_OPTION, RulerNamedSuite
from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE


class MultiNiahSuite(RulerNamedSuite):
    def driver(self, inputs):
        from ccq_eval.suites.multi_niah.driver import MultiNiahDriver

        return MultiNiahDriver(inputs)


def _prompt_context(record, width):
    """The first answer's needle (the asked one in the multi-key tasks) in its haystack."""
    from ccq_eval.suites.sniah.examples import needle_context

    keys = record.get("keys")
    return needle_context({**record, "key": keys[0]}, width) if isinstance(keys, list) and keys else None


SUITE = MultiNiahSuite(
    name="multi_niah",
    retrieval="multi-NIAH",
    tasks=("niah_multikey_1", "niah_multikey_2", "niah_multikey_3", "niah_multivalue", "niah_multiquery"),
    default_lengths=(1024, 2048, 4096, 8192),
    default_samples=500,
    display={"niah_multikey_1": "MK1", "niah_multikey_2": "MK2", "niah_multikey_3": "MK3",
             "niah_multivalue": "MV", "niah_multiquery": "MQ"},
    options=(HAYSTACK_OPTION,),
    length_means=f"prompt + {TOKENS_TO_GENERATE} generated tokens <= L",
    samples_mean="samples per task and length",
    in_all=False,  # not one of the paper's tables: run by name
    seed_metrics=(SeedMetric("score", "acc", True), SeedMetric("answer_nll", "answers' NLL", False)),
    sample_view=SampleView(fields=(("depth", ("depth_used", "depth")), ("keys", ("keys",)),
                                   ("answers' NLL", ("answer_nll",)), ("prompt tokens", ("prompt_tokens",))),
                           depth="depth", context=_prompt_context),
    records_folder="multi_niah",
)
