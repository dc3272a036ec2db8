"""S-NIAH examples as plain (prompt, answer) text, drawn from a caller's random generator: the public face of
the generator for code outside the suite (the zoo's training curriculum), so that code sees the needles,
questions and prompts the suite evaluates without reaching into data.py."""

from __future__ import annotations

import random

from ccq_eval.suites.sniah import data as sniah


def lookup_example(rng: random.Random) -> tuple[str, str]:
    """One needle and its question, nothing else (the copy without a haystack): (text ending in the answer
    prefix and a space, the answer with its full stop)."""
    key, value = sniah.random_key(rng), sniah.random_value("numbers", rng)
    needle = sniah.NEEDLE.format(type_plural="numbers", key=key, value=value)
    return needle + "\n" + sniah.ANSWER_PREFIX.format(type="number", query=key) + " ", value + "."


def sniah_1_example(rng: random.Random, characters: int) -> tuple[str, str]:
    """An S-NIAH-1 prompt of about ``characters`` characters with its answer (never shorter than the template)."""
    variant = sniah.VARIANTS["sniah_1"]
    key, value, placement = sniah.random_key(rng), sniah.random_value("numbers", rng), rng.getrandbits(64)
    bare = len(sniah.prompt_of(sniah.sample(variant, 0, key, value, placement, None))) + len(value) + 3
    units = max(0, (characters - bare) // (len(sniah.REPEAT_FILLER) + 1))  # one filler line and its newline
    record = sniah.sample(variant, units, key, value, placement, None)
    return sniah.prompt_of(record) + " ", value + "."


def needle_context(record: dict, width: int) -> dict | None:
    """The needle's sentence of a frozen prompt record with ``width`` characters of haystack each side:
    {"label", "before", "needle", "after"}, or None when the prompt holds no needle for its key and value."""
    import re

    prompt, value = record.get("input"), (record.get("outputs") or [None])[0]
    if not isinstance(prompt, str) or not isinstance(value, str) or not isinstance(record.get("key"), str):
        return None
    needle = re.escape(sniah.NEEDLE).replace(r"\{type_plural\}", r"\w+")
    needle = needle.replace(r"\{key\}", re.escape(record["key"])).replace(r"\{value\}", re.escape(value))
    found = re.search(needle, prompt)
    if found is None:
        return None
    from ccq_eval.suites.prompt_context import span_context

    return span_context(prompt, found.span(), width, "needle in context")
