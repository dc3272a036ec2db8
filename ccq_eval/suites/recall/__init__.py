"""The six recall-intensive tasks (SWDE, SQuAD, FDA, in-context TriviaQA, NQ and DROP) as the Based / JRT protocol
defines them: the reference's hub records, each document cut to a fixed token budget in the model's tokenizer, its
prompt, a short greedy answer up to the first newline, contains-match scoring. tasks.py (the table of tasks), cut.py
(the cut), data.py (records, prompts frozen in the cache, `data fetch`), plugin.py (what tasks/recall calls),
scoring.py, driver.py, context.py (the span the report marks), tables.py (the six-task recall table). Importing this
module imports none of them."""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, SampleView, Suite

TASK_IDS = ("recall_swde", "recall_squad", "recall_fda", "recall_triviaqa", "recall_nq", "recall_drop")


class RecallSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.recall.driver import RecallDriver

        return RecallDriver(inputs)

    def lm_eval_units(self, task, results):
        from ccq_eval.interchange.lm_eval_document import length_units

        return length_units(self.name, task, results, "contains", True) if task in self.all_tasks else None

    def task_files(self):
        import json

        from ccq_eval.suites.recall.tasks import MAX_GEN, TASK_VERSION, UNTIL
        from ccq_eval.suites.task_files import generating_task_files

        return generating_task_files(self, "recall_task", MAX_GEN, f"[{json.dumps(UNTIL)}]", TASK_VERSION)


def _fetch_names():
    return tuple(t.removeprefix("recall_") for t in TASK_IDS)


def _fetch(names):
    from ccq_eval.suites.recall.data import fetch

    return fetch([f"recall_{n}" for n in names] if names else None)


def _prompt_context(record, width):
    from ccq_eval.suites.recall.context import recall_context

    return recall_context(record, width)


SUITE = RecallSuite(
    name="recall",
    retrieval="in-context recall",
    tasks=TASK_IDS,
    default_lengths=(2048,),
    default_samples=None,
    display={"recall_swde": "SWDE", "recall_squad": "SQD", "recall_fda": "FDA", "recall_triviaqa": "TQA",
             "recall_nq": "NQ", "recall_drop": "Drop"},
    fetcher=DataFetch(_fetch_names, _fetch),
    in_all=False,  # not one of the paper's tables: run by name
    length_means="each document cut to L - 50 tokens (the protocol's context_length L)",
    samples_mean="records per task",
    sample_view=SampleView(target="answer", score="contains",
                           fields=(("prompt tokens", ("prompt_tokens",)), ("document tokens", ("document_tokens",)),
                                   ("kept tokens", ("kept_tokens",))), context=_prompt_context,
                           prompt_field="prompt"),
    records_folder="recall-prompts",
)
