"""S-NIAH (RULER's single-needle tasks): everything only this suite knows lives in this folder.

data.py (the generator), haystack.py (essay haystacks), plugin.py (what tasks/sniah calls),
scoring.py (RULER's string match, partial retrieval), driver.py (units -> outcomes), protocol.py (its
numbers), tables.py (the accuracy and partial-retrieval tables), figures.py (the needle-depth heatmap),
paired.py (per-prompt scores for the pairs table), columns.py. Importing this module imports none of the
heavy ones.
"""

from __future__ import annotations

from ccq_eval.suites.base import SampleView, SeedMetric, Suite, SuiteOption
from ccq_eval.suites.sniah.protocol import TASK_VERSION, TOKENS_TO_GENERATE


# shared with the multi-needle suite (its essay tasks)
HAYSTACK_OPTION = SuiteOption("haystack", "essay haystack for the essay tasks (S-NIAH-2/3; MK1, MV, MQ): a .txt/.jsonl "
                                          "file or folder (default: DATA_DIR/haystack, else the shipped ccq-essays)")


class SniahSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.sniah.driver import SniahDriver

        return SniahDriver(inputs)

    def paired_cells(self, results):
        from ccq_eval.suites.sniah.paired import paired_cells

        return paired_cells(self, results)

    def lm_eval_units(self, task, results):
        from ccq_eval.interchange.lm_eval_document import length_units

        return length_units(self.name, task, results, "score", True) if task in self.all_tasks else None

    def task_files(self):
        from ccq_eval.suites.task_files import generating_task_files

        # greedy, RULER's generation budget; stock lm-eval's generate_until reads it from here
        return generating_task_files(self, f"{self.name}_task", TOKENS_TO_GENERATE, "[]", TASK_VERSION)


class RulerNamedSuite(SniahSuite):
    """A suite whose task names lm-eval's own RULER port uses too (the multi-needle and ruler suites)."""

    def lm_eval_units(self, task, results):
        """Only this suite's plugin's results: lm-eval's own RULER port has the same task names (and another
        generator), and its config lacks the plugin's dataset_kwargs."""
        if task not in self.all_tasks:
            return None
        config = ((results.data.get("configs") or {}).get(task) or {}).get("dataset_kwargs") or {}
        if config.get(f"{self.name}_task") != task:
            return "lm-eval's own RULER task of that name (not ccq-eval's plugin): its data is not this suite's"
        return super().lm_eval_units(task, results)


def _prompt_context(record, width):
    from ccq_eval.suites.sniah.examples import needle_context

    return needle_context(record, width)


SUITE = SniahSuite(
    name="sniah",
    retrieval="S-NIAH",
    tasks=("sniah_1", "sniah_2", "sniah_3"),
    default_lengths=(1024, 2048, 4096, 8192),
    default_samples=500,
    display={"sniah_1": "S1", "sniah_2": "S2", "sniah_3": "S3"},
    options=(HAYSTACK_OPTION,),
    length_means=f"prompt + {TOKENS_TO_GENERATE} generated tokens <= L",
    samples_mean="samples per task and length",
    length_in_key_settings=True,
    seed_metrics=(SeedMetric("score", "acc", True), SeedMetric("answer_nll", "answer NLL", False)),
    sample_view=SampleView(fields=(("depth", ("depth_used", "depth")), ("key", ("key",)),
                                   ("answer NLL", ("answer_nll",)), ("prompt tokens", ("prompt_tokens",))),
                           depth="depth", context=_prompt_context),
    records_folder="sniah",
)
