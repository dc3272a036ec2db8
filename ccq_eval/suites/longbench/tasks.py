"""LongBench's 14 English tasks as one table, as THUDM/LongBench defines them (commit
c5ea10bcd06285223c58dfed76bbc92d22273709, the last to change LongBench/config/ and the scorer):
the prompt (dataset2prompt.json, byte for byte, typos included), the generation budget
(dataset2maxlen.json), the metric (eval.py's dataset2metric), eval.py's first-line rule, and
pred.py's newline stop for samsum. The task YAMLs in tasks/longbench are generated from it (Suite.task_files).

These are read from the official files, not from lm-eval's LongBench port, whose prompts differ for
triviaqa and samsum ("\\n{input}" for "\\n\\n{input}") and for lcc and repobench-p (no final newline).
"""

from __future__ import annotations

import json

from dataclasses import dataclass

_PASSAGES_QA = ("Answer the question based on the given passages. Only give me the answer and do not output any "
                "other words.\n\nThe following are given passages.\n{context}\n\nAnswer the question based on the "
                "given passages. Only give me the answer and do not output any other words.\n\nQuestion: {input}\n"
                "Answer:")
_CODE = "Please complete the code given below. \n{context}"


@dataclass(frozen=True)
class LongBenchTask:
    key: str  # LongBench's dataset key
    max_gen: int  # dataset2maxlen
    metric: str  # dataset2metric
    first_line: bool  # eval.py keeps only the first line of these predictions
    prompt: str  # dataset2prompt, filled with str.format(**record) as pred.py does
    stop_at_newline: bool = False  # pred.py: generation also ends at the newline token (samsum)
    # 1.0: first version. 1.1: the official prompt (triviaqa, samsum, lcc, repobench-p), samsum's newline
    # stop, the official code similarity (lcc, repobench-p). Part of every unit's key: old units rerun.
    version: float = 1.0


TASKS: dict[str, LongBenchTask] = {t.key: t for t in (
    LongBenchTask("narrativeqa", 128, "qa_f1_score", False,
                  "You are given a story, which can be either a novel or a movie script, and a question. Answer the "
                  "question asconcisely as you can, using a single phrase if possible. Do not provide any explanation."
                  "\n\nStory: {context}\n\nNow, answer the question based on the story asconcisely as you can, using "
                  "a single phrase if possible. Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:"),
    LongBenchTask("qasper", 128, "qa_f1_score", False,
                  "You are given a scientific article and a question. Answer the question as concisely as you can, "
                  "using a single phrase or sentence if possible. If the question cannot be answered based on the "
                  "information in the article, write \"unanswerable\". If the question is a yes/no question, answer "
                  "\"yes\", \"no\", or \"unanswerable\". Do not provide any explanation.\n\nArticle: {context}\n\n "
                  "Answer the question based on the above article as concisely as you can, using a single phrase or "
                  "sentence if possible. If the question cannot be answered based on the information in the article, "
                  "write \"unanswerable\". If the question is a yes/no question, answer \"yes\", \"no\", or "
                  "\"unanswerable\". Do not provide any explanation.\n\nQuestion: {input}\n\nAnswer:"),
    LongBenchTask("multifieldqa_en", 64, "qa_f1_score", False,
                  "Read the following text and answer briefly.\n\n{context}\n\nNow, answer the following question "
                  "based on the above text, only give me the answer and do not output any other words.\n\nQuestion: "
                  "{input}\nAnswer:"),
    LongBenchTask("hotpotqa", 32, "qa_f1_score", False, _PASSAGES_QA),
    LongBenchTask("2wikimqa", 32, "qa_f1_score", False, _PASSAGES_QA),
    LongBenchTask("musique", 32, "qa_f1_score", False, _PASSAGES_QA),
    LongBenchTask("gov_report", 512, "rouge_score", False,
                  "You are given a report by a government agency. Write a one-page summary of the report.\n\nReport:\n"
                  "{context}\n\nNow, write a one-page summary of the report.\n\nSummary:"),
    LongBenchTask("qmsum", 512, "rouge_score", False,
                  "You are given a meeting transcript and a query containing a question or instruction. Answer the "
                  "query in one or more sentences.\n\nTranscript:\n{context}\n\nNow, answer the query based on the "
                  "above meeting transcript in one or more sentences.\n\nQuery: {input}\nAnswer:"),
    LongBenchTask("multi_news", 512, "rouge_score", False,
                  "You are given several news passages. Write a one-page summary of all news. \n\nNews:\n{context}\n\n"
                  "Now, write a one-page summary of all the news.\n\nSummary:"),
    LongBenchTask("trec", 64, "classification_score", True,
                  "Please determine the type of the question below. Here are some examples of questions.\n\n"
                  "{context}\n{input}"),
    LongBenchTask("triviaqa", 32, "qa_f1_score", True,
                  "Answer the question based on the given passage. Only give me the answer and do not output any "
                  "other words. The following are some examples.\n\n{context}\n\n{input}"),
    LongBenchTask("samsum", 128, "rouge_score", True,
                  "Summarize the dialogue into a few short sentences. The following are some examples.\n\n{context}"
                  "\n\n{input}", stop_at_newline=True, version=1.1),
    LongBenchTask("lcc", 64, "code_sim_score", False, _CODE + "Next line of code:\n", version=1.1),
    LongBenchTask("repobench-p", 64, "code_sim_score", False, _CODE + "{input}Next line of code:\n", version=1.1),
)}

# the released test sets' sizes (THUDM/LongBench LongBench/task.md, "#Sample"): what a full run scores per task
RELEASED_SAMPLES = {key: {"multifieldqa_en": 150, "lcc": 500, "repobench-p": 500}.get(key, 200) for key in TASKS}


def eos_strings(task: LongBenchTask) -> tuple[str, ...]:
    """The strings whose last token also ends a generation (pred.py: samsum's newline)."""
    return ("\n",) if task.stop_at_newline else ()


def generation_yaml(task: LongBenchTask) -> str:
    """The task's generation settings in its YAML: pred.py's budget, greedy, samsum's newline stop."""
    return ("generation_kwargs:\n"
            f"  max_gen_toks: {task.max_gen}\n"
            "  do_sample: false\n"
            "  temperature: 0.0\n"
            "  until: []\n"
            + (f"  eos_strings: {json.dumps(list(eos_strings(task)))}\n" if eos_strings(task) else ""))
