"""How every needle-in-a-haystack generator here sizes its haystack: with the model's own tokenizer, so that the
whole prompt, answer prefix included (what the model reads), plus the tokens to generate fits the length. RULER
grows the haystack in steps (25 lines / 500 words) and stops below the budget; a binary search finds the largest
haystack that fits. S-NIAH (data.py) and the multi-needle tasks (suites/multi_niah) differ only in what one sample
draws and how a record is built from it (``build(units, drawn) -> record``)."""

from __future__ import annotations

from dataclasses import dataclass

from typing import Callable, Sequence

from ccq_eval.errors import BadInput
from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE

# the search gives up when this many doublings of the haystack (256x) add no token: a tokenizer that drops the
# text; a coarse one (a token per thousand characters) still grows within them
STALLED_DOUBLINGS = 8


class SniahError(BadInput):
    """A length or tokenizer that cannot hold a needle prompt; the message says what to do."""


def prompt_of(record: dict) -> str:
    """The text the model reads: lm-eval joins doc_to_text and gen_prefix with one space."""
    return record["input"] + " " + record["gen_prefix"]


def count_tokens(tokenizer, text: str) -> int:
    """As the LM wrapper will encode it (special tokens included)."""
    return len(tokenizer(text)["input_ids"])


Build = Callable[[int, object], dict]  # (haystack units, one sample's draws) -> record


def smallest_length(tokenizer, build: Build, drawn: Sequence, least: int = 0,
                    to_generate: int = TOKENS_TO_GENERATE) -> int:
    """The smallest length whose budget holds every one of ``drawn`` with the smallest haystack (``least``
    units), plus the tokens to generate: below it a sample cannot be generated at all."""
    return max(count_tokens(tokenizer, prompt_of(build(least, d))) for d in drawn) + to_generate


@dataclass(frozen=True)
class Bounded:
    """A haystack of at most ``units`` units (RULER's QA documents); ``refusal``: the one line for a length that
    all of them still fit, which only repeating them could fill."""

    units: int
    refusal: str


def haystack_units(task: str, tokenizer, length: int, build: Build, probe, least: int = 0,
                   to_generate: int = TOKENS_TO_GENERATE, most: Bounded | None = None) -> int:
    """The largest haystack (in units: filler lines, essay words, documents) whose prompt for the ``probe`` sample
    fits ``length - to_generate`` tokens."""
    budget = length - to_generate

    def fits(units):
        tokens = count_tokens(tokenizer, prompt_of(build(units, probe)))
        return tokens <= budget, tokens

    ok, tokens = fits(least)
    if not ok:
        raise SniahError(f"length {length}: the {task} prompt alone needs more than {budget} tokens plus "
                         f"{to_generate} to generate; use a larger --lengths value")
    low, high = least, least + 1
    grown_at, grown_to = least, tokens  # the last unit count that added tokens, and its tokens
    while (probe_fit := fits(min(high, most.units) if most else high))[0]:
        if most and high >= most.units:
            raise SniahError(most.refusal)
        if probe_fit[1] > grown_to:
            grown_at, grown_to = high, probe_fit[1]
        elif high >= max(grown_at, 1) * 2 ** STALLED_DOUBLINGS and high >= 2 ** STALLED_DOUBLINGS:
            # RULER repeats a haystack without bound: what ends the search is text that stops adding tokens
            raise SniahError(f"length {length}: {high} haystack units encode to {probe_fit[1]} tokens, no more than "
                             f"{grown_at} did; the tokenizer drops the haystack's text, so no length can be filled")
        low, high = high, high * 2
    high = min(high, most.units) if most else high
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid)[0] else (low, mid)
    return low


def fitted_records(task: str, tokenizer, length: int, build: Build, drawn: Sequence, probe, least: int = 0,
                   progress=None, to_generate: int = TOKENS_TO_GENERATE, answers_in_prompt: bool = True,
                   most: Bounded | None = None) -> list[dict]:
    """One record per ``drawn`` sample at the probe's haystack size; a sample whose longer keys push it over is
    shrunk until it fits. Each record carries its index, its length (prompt + tokens to generate) and the
    length asked for. ``answers_in_prompt``: every expected answer must be in its prompt (not so for QA, whose
    answers may be yes / no)."""
    budget = length - to_generate
    units = haystack_units(task, tokenizer, length, build, probe, least, to_generate, most)
    records = []
    for index, sample in enumerate(drawn):
        n = units
        record = build(n, sample)
        tokens = count_tokens(tokenizer, prompt_of(record))
        while tokens > budget:
            if n == least:
                raise SniahError(f"length {length}: the {task} prompt of sample {index} alone needs {tokens} tokens "
                                 f"plus {to_generate} to generate; use a larger --lengths value")
            n = max(least, n - max(1, n // 200))
            record = build(n, sample)
            tokens = count_tokens(tokenizer, prompt_of(record))
        records.append({"index": index, **record, "length": tokens + to_generate, "max_length": length})
        if progress is not None:
            progress.update(1)
    for record in records if answers_in_prompt else ():
        if any(value not in record["input"] for value in record["outputs"]):
            raise RuntimeError(f"{task}: a needle value is missing from sample {record['index']}")
    return refuse_repeats(task, length, records)


def refuse_repeats(task: str, length: int, records: list[dict]) -> list[dict]:
    """The records, unless a prompt reads its essays twice (not the task RULER defines); checked on generating and
    on every read from the cache, which may hold records written before the check."""
    repeated = [r for r in records if r.get("haystack_passes", 1) > 1]
    if repeated:
        raise SniahError(f"length {length}: the {task} prompts need {repeated[0]['haystack_units']} words of essays "
                         "and the haystack holds fewer, so each would repeat its sentences; pass --haystack a longer "
                         "collection (the paper's Paul Graham essays) or use a smaller --lengths value")
    return records
