"""bAbI's task files read as BABILong's reference reads them (``TaskDataset`` over ``get_dataset_df`` in
booydar/babilong's babilong_utils.py): one sample per question, holding the story's statements before it (earlier
questions left out), the question, its answer and the statements its supporting numbers name.

A line is ``<number> <text>``; a question line is ``<number> <question>\\t<answer>\\t<supporting numbers>``; a story
restarts at number 1. Anything else is refused in one line naming the file and the line."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ccq_eval.errors import BadInput


class BabiError(BadInput):
    """A bAbI task file that is not in bAbI's line format; the message names the file and the line."""


@dataclass(frozen=True)
class Story:
    facts: tuple[str, ...]  # the statements before the question, in order
    question: str  # as the file writes it (bAbI leaves a space before the tab)
    answer: str
    references: tuple[str, ...]  # the supporting statements, in the file's order


_LINE = re.compile(r"(\d+) (.*)")


def read_babi(text: str, where: str, max_facts: int | None = None) -> list[Story]:
    """Every question of a task file as a sample; with ``max_facts``, samples with more statements are dropped (the
    reference's ``max_n_facts``)."""
    samples, story, questions = [], [], 0  # story: (number, statement) since the last "1"
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        match = _LINE.fullmatch(line)
        if match is None:
            raise BabiError(f"{where}: line {number} is not '<number> <text>'; expected bAbI's task format")
        index, body = int(match.group(1)), match.group(2)
        if index == 1:
            story = []
        if "\t" not in body:
            story.append((index, body))
            continue
        parts = body.split("\t")
        supporting = re.split(r"\t| ", body[body.index("\t") + 1:])[1:]
        if len(parts) < 2 or not parts[1].strip() or not all(n.isdigit() for n in supporting):
            raise BabiError(f"{where}: line {number} is a question without '\\t<answer>\\t<supporting numbers>'")
        questions += 1
        named = {int(n) for n in supporting}
        facts = tuple(statement for _, statement in story)
        if max_facts is not None and len(facts) + 1 > max_facts:
            continue
        samples.append(Story(facts, parts[0], parts[1],
                             tuple(statement for i, statement in story if i in named)))
    if not questions:
        raise BabiError(f"{where}: no question; expected bAbI's task format")
    return samples
