"""BABILong's score, as its reference defines it (``compare_answers`` and ``TASK_LABELS`` in booydar/babilong's
babilong/metrics.py): the output's first sentence, lowercased and cut before any ``<context>``, ``<example>`` or
``Question``, must name the target and no other of the task's labels, labels that the question itself names aside
(for qa8's lists, every part of the target and nothing else)."""

from __future__ import annotations

LOCATIONS = ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office")
TASK_LABELS = {
    "qa1": LOCATIONS, "qa2": LOCATIONS, "qa3": LOCATIONS, "qa4": LOCATIONS,
    "qa5": ("Bill", "Fred", "Jeff", "Mary", "apple", "football", "milk"),
    "qa6": ("no", "yes"), "qa7": ("none", "one", "three", "two"), "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": ("no", "yes"), "qa10": ("maybe", "no", "yes"), "qa11": LOCATIONS, "qa12": LOCATIONS, "qa13": LOCATIONS,
    "qa14": ("bedroom", "cinema", "kitchen", "office", "park", "school"), "qa15": ("cat", "mouse", "sheep", "wolf"),
    "qa16": ("gray", "green", "white", "yellow"), "qa17": ("no", "yes"), "qa18": ("no", "yes"),
    "qa19": ("e,e", "e,n", "e,s", "n,e", "n,n", "n,w", "s,e", "s,s", "s,w", "w,n", "w,s", "w,w"),
    "qa20": ("bedroom", "bored", "garden", "hungry", "kitchen", "thirsty", "tired"),
}


def process_results(doc: dict, results: list[str]) -> dict[str, float]:
    """What tasks/babilong's plugin returns for one document: its score over every length and under its own length's
    metric (lm-eval's RULER habit); the output stripped, as the reference strips it."""
    from ccq_eval.suites.plugin_args import per_length

    value = 100.0 if correct(doc["target"], results[0].strip(), doc["question"], doc["task"]) else 0.0
    return {"score": value, **per_length("babilong", doc, value)}


def score_at_length(items) -> float:
    from ccq_eval.suites.plugin_args import at_length, mean

    return at_length(mean)(items)


def first_sentence(output: str) -> str:
    """The part of an output the score reads."""
    text = output.lower().split(".")[0]
    for marker in ("<context>", "<example>", "Question"):  # "Question" as the reference writes it, after lowercasing
        text = text.split(marker)[0]
    return text


def correct(target: str, output: str, question: str, task: str) -> bool:
    """Whether ``output`` answers with ``target``: the one label of the task it names, beside those in the question."""
    text, target = first_sentence(output), target.lower()
    labels = {label.lower() for label in TASK_LABELS[task]}
    named = {label for label in labels if label in text} - {label for label in labels if label in question.lower()}
    if "," in target and len(target) > 3:  # qa8: every listed item, and only those
        parts = target.split(",")
        return all(part in named for part in parts) and len(named) == len(parts)
    return target in named and len(named) == 1
