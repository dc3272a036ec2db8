"""Long-context perplexity, 4K to 20K on six corpora: everything only this suite knows.

corpora.py (sources, reading, the selection rules), perplexity.py (one pass per sequence),
plugin.py (what tasks/longppl calls: the lm-eval cross-check), driver.py, tables.py (the table and
its intervals), figures.py (the extrapolation curves), paired.py (per-sequence NLLs for the pairs table). Importing this module imports none of them.
"""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, SampleView, SeedMetric, Suite, SuiteOption


TASK_VERSION = 1.0  # of the task plugins in tasks/longppl (the selection has its own version)


class LongpplSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.longppl.driver import LongpplDriver

        return LongpplDriver(inputs)

    def paired_cells(self, results):
        from ccq_eval.suites.longppl.paired import paired_cells

        return paired_cells(self, results)

    def lm_eval_units(self, task, results):
        from ccq_eval.interchange.lm_eval_document import length_units

        return length_units(self.name, task, results, "perplexity", False) if task in self.all_tasks else None

    def task_files(self):
        from ccq_eval.suites.plugin_args import reported_lengths
        from ccq_eval.suites.task_files import metric_list_yaml, task_yaml

        metrics = metric_list_yaml("perplexity", "!function utils.token_perplexity",
                                   "!function utils.perplexity_at_length", False, reported_lengths(self))
        return {f"{task}.yaml": task_yaml(self.name, task, {"corpus": self.short(task)}, TASK_VERSION, more=metrics)
                for task in self.all_tasks}


def _fetch_names():
    from ccq_eval.suites.longppl.corpora import CORPORA

    return tuple(CORPORA)


def _fetch(names):
    from ccq_eval.suites.longppl.corpora import fetch

    return fetch(names)


SUITE = LongpplSuite(
    name="longppl",
    tasks=tuple(f"longppl_{c}" for c in ("govreport", "qmsum", "narrativeqa", "qasper", "codeparrot", "pg19")),
    default_lengths=tuple(range(4096, 20480 + 1, 2048)),
    default_samples=100,
    display={"longppl_govreport": "GovReport", "longppl_qmsum": "QMSum", "longppl_narrativeqa": "NarrativeQA",
             "longppl_qasper": "Qasper", "longppl_codeparrot": "CodeParrot", "longppl_pg19": "PG19",
             "longppl_essays": "Essays (seen)", "longppl_essays_heldout": "Essays (held out)", "longppl_pydocs": "PyDocs", "longppl_pycode": "PyCode"},
    # corpora every Python installation carries (corpora.SHIPPED): the offline demo's
    extra_tasks=("longppl_essays", "longppl_essays_heldout", "longppl_pydocs", "longppl_pycode"),
    options=(SuiteOption("engine", "one-pass (default; one forward per sequence gives every length) or lm-eval "
                                   "(loglikelihood_rolling per length, the cross-check)",
                         default="one-pass", choices=("one-pass", "lm-eval")),),
    length_means="L scored tokens",
    samples_mean="documents per corpus",
    seed_metrics=(SeedMetric("perplexity", "ppl", False),),
    fetcher=DataFetch(_fetch_names, _fetch),
    sample_view=SampleView(target="document", prediction=False, score="perplexity", graded=False,
                           fields=(("tokens", ("tokens",)), ("NLL (sum)", ("nll_sum",)))),
    not_rescorable="perplexity is the model's likelihood of the text, not a scored output; rerun the model",
)
