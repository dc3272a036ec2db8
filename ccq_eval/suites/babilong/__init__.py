"""BABILong (Kuratov et al., 2024): bAbI's reasoning tasks with their statements hidden among sentences of a haystack,
generated at the model's own lengths as the reference (booydar/babilong) generates them, and scored as it scores
them: qa1-qa5 at any length, qa6-qa20 at 0 (their statements alone). babi.py (bAbI's task files, as the reference reads them), prompts.py (its prompt and variants), scoring.py (its
``compare_answers``), noise.py (a sample at a given length in the model's tokens), data.py (a unit's stories, haystack
and frozen records), published.py (the published splits), driver.py, tables.py, figures.py, plugin.py (what
tasks/babilong calls). Importing this module imports none of the heavy ones."""

from __future__ import annotations

from ccq_eval.suites.base import DataFetch, SampleView, SeedMetric, SuiteOption
from ccq_eval.suites.sniah import HAYSTACK_OPTION, SniahSuite

TASKS = tuple(f"babilong_qa{n}" for n in range(1, 6))
# bAbI's other fifteen tasks, run by name and at 0 only (without a haystack), as the reference publishes them
NO_HAYSTACK_TASKS = tuple(f"babilong_qa{n}" for n in range(6, 21))
TASK_VERSION = 1
PROMPT_OPTION = SuiteOption("babilong-prompt", "which parts of BABILong's prompt to give: full (default), "
                                               "no-instruction, no-examples, no-post-prompt or bare (the context and "
                                               "question alone), the reference's variants",
                            default="full", choices=("full", "no-instruction", "no-examples", "no-post-prompt", "bare"))
SOURCE_OPTION = SuiteOption("babilong-source", "generated (default): samples built at the model's own lengths; "
                                               "published: BABILong's published splits as they are (ccq-eval data "
                                               "fetch babilong; --lengths 1k,2k,...,64k name the splits)",
                            default="generated", choices=("generated", "published"))


class BabilongSuite(SniahSuite):
    """S-NIAH's reading of lm-eval's results (per length) and per-prompt pairs, with this suite's driver and plugin."""

    def driver(self, inputs):
        from ccq_eval.suites.babilong.driver import BabilongDriver

        return BabilongDriver(inputs)

    def task_files(self):
        from ccq_eval.suites.babilong.noise import OUTPUT_TOKENS
        from ccq_eval.suites.task_files import generating_task_files

        # greedy, the reference's 20 tokens; stock lm-eval's generate_until reads them from here
        return generating_task_files(self, "babilong_task", OUTPUT_TOKENS, "[]", TASK_VERSION)


def _fetch_names():
    from ccq_eval.suites.babilong.published import SPLITS

    return SPLITS


def _fetch(names):
    from ccq_eval.suites.babilong.published import fetch

    return fetch(names)


def _fact_context(record, width):
    """The first supporting statement where it sits in the prompt's context."""
    from ccq_eval.suites.prompt_context import span_context

    prompt, references = record.get("prompt"), record.get("references")
    if not isinstance(prompt, str) or not isinstance(references, list) or not references:
        return None
    at = prompt.find(str(references[0]), prompt.rfind("<context>"))  # qa10-qa16, qa20: examples end in one
    return span_context(prompt, (at, at + len(str(references[0]))), width, "supporting fact") if at >= 0 else None


SUITE = BabilongSuite(
    name="babilong",
    tasks=TASKS,
    default_lengths=(1024, 2048, 4096, 8192),
    default_samples=100,
    extra_tasks=NO_HAYSTACK_TASKS,
    plugin_tasks=TASKS,  # qa6-qa20 and length 0 are `ccq-eval run`'s (a plugin's lengths are positive)
    display={task: task.removeprefix("babilong_").upper() for task in TASKS + NO_HAYSTACK_TASKS},
    options=(HAYSTACK_OPTION, PROMPT_OPTION, SOURCE_OPTION),
    fetcher=DataFetch(_fetch_names, _fetch),
    in_all=False,  # not one of the paper's tables: run by name
    length_means="prompt (template, context, question) + 20 generated tokens <= L",
    zero_length="the story's statements alone, no haystack (the reference's 0k; qa6-qa20 run only there)",
    samples_mean="bAbI questions per task and length (every one the stories hold, when fewer)",
    seed_metrics=(SeedMetric("score", "acc", True),),
    sample_view=SampleView(target="target", fields=(("question", ("question",)), ("statements", ("facts",)),
                                                   ("prompt tokens", ("prompt_tokens",))),
                           context=_fact_context, prompt_field="prompt"),
    records_folder="babilong",
)
