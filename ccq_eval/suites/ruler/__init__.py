"""RULER's tasks past the needles: variable tracking (VT), common words extraction (CWE), frequent words
extraction (FWE), and QA over SQuAD / HotpotQA documents. compose.py and qa.py (a prompt from its draws, as
NVIDIA/RULER composes it), qa_data.py (the QA documents), data.py (draws, sizing, the frozen records), driver.py (S-NIAH's driver over these), scoring.py and plugin.py (what tasks/ruler calls), tables.py
(the RULER table: every RULER task a store holds, per length). Importing this module imports none of the heavy ones.
"""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, SampleView, SeedMetric
from ccq_eval.suites.sniah import RulerNamedSuite
from ccq_eval.suites.sniah.protocol import TASK_VERSION

# RULER's constants.py, per task (qa_1 / qa_2: SQuAD / HotpotQA documents)
TOKENS_TO_GENERATE = {"ruler_vt": 30, "ruler_cwe": 120, "ruler_fwe": 50, "ruler_qa_squad": 32, "ruler_qa_hotpot": 32}


QA_TASKS = ("ruler_qa_squad", "ruler_qa_hotpot")  # scored by string_match_part (any answer); the rest by _all


class RulerSuite(RulerNamedSuite):
    def driver(self, inputs):
        from ccq_eval.suites.ruler.driver import RulerDriver

        return RulerDriver(inputs)

    def task_files(self):
        from ccq_eval.suites.plugin_args import reported_lengths
        from ccq_eval.suites.task_files import metric_list_yaml, task_yaml

        metrics = metric_list_yaml("score", "mean", "!function utils.score_at_length", True, reported_lengths(self))

        def generation(task):  # greedy, RULER's budget for the task; stock lm-eval's generate_until reads it here
            scoring = "process_results: !function utils.process_results_part\n" if task in QA_TASKS else ""
            return (scoring + "generation_kwargs:\n  do_sample: false\n  temperature: 0.0\n"
                    f"  max_gen_toks: {TOKENS_TO_GENERATE[task]}\n  until: []\n")

        return {f"{task}.yaml": task_yaml(self.name, task, {f"{self.name}_task": task}, TASK_VERSION,
                                          more=generation(task) + metrics) for task in self.tasks}


def _fetch_names():
    from ccq_eval.suites.ruler.qa_data import HUB

    return tuple(HUB)


def _fetch(names):
    from ccq_eval.suites.ruler.qa_data import fetch

    return fetch(names)


def _prompt_context(record, width):
    from ccq_eval.suites.ruler.context import task_context

    return task_context(record, width)


SUITE = RulerSuite(
    name="ruler",
    retrieval="RULER VT/CWE/FWE/QA",
    tasks=tuple(TOKENS_TO_GENERATE),
    default_lengths=(4096, 8192, 16384, 32768),
    default_samples=500,
    display={"ruler_vt": "VT", "ruler_cwe": "CWE", "ruler_fwe": "FWE", "ruler_qa_squad": "QA-1",
             "ruler_qa_hotpot": "QA-2"},
    length_means="prompt + the task's generated tokens (VT 30, CWE 120, FWE 50, QA 32) <= L",
    samples_mean="samples per task and length",
    in_all=False,  # not one of the paper's tables: run by name
    seed_metrics=(SeedMetric("score", "score", True),),
    sample_view=SampleView(fields=(("answers' NLL", ("answer_nll",)), ("prompt tokens", ("prompt_tokens",))),
                           context=_prompt_context),
    records_folder="ruler",
    fetcher=DataFetch(_fetch_names, _fetch),
)
