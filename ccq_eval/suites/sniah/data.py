"""S-NIAH data, faithful to RULER's niah_single_1/2/3 (as lm-eval's ``ruler`` port writes them).

- S-NIAH-1: the five-sentence filler repeated; the needle replaces no filler, it is inserted between
  two repetitions at a random position; keys are adjective-noun pairs, values 7-digit numbers.
- S-NIAH-2: an essay haystack; the needle goes at one of 40 evenly spaced depths, at a sentence
  boundary; 7-digit values.
- S-NIAH-3: as S-NIAH-2 with UUID values.

The haystack is sized with the model's own tokenizer so that the whole prompt, answer prefix
included (what the model actually reads), plus the tokens to generate (protocol.py) fits the length. RULER grows the
haystack in steps of 25 repetitions / 500 words and stops below the budget; a binary search here
finds the largest haystack that fits. Generated data is frozen in the cache (see ``cache``).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ccq_eval.data.cache import cache_root, load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.errors import BadInput
from ccq_eval.suites.sniah.haystack import Haystack
from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE
from ccq_eval.suites.sniah.sentences import SPLITTER, split_sentences

GENERATOR_VERSION = 1
# the haystack search gives up when this many doublings of its text (256x) add no token: a tokenizer that
# drops the text; a coarse one (a token per thousand characters) still grows within them
STALLED_DOUBLINGS = 8
REPEAT_FILLER = "The grass is green. The sky is blue. The sun is yellow. Here we go. There and back again."
NEEDLE = "One of the special magic {type_plural} for {key} is: {value}."
# RULER's template, in the single-needle form its generator derives ("Some ... are" -> "A ... is")
TEMPLATE = ("A special magic {type} is hidden within the following text. Make sure to memorize it. "
            "I will quiz you about the {type} afterwards.\n{context}\n"
            "What is the special magic {type} for {query} mentioned in the provided text?")
ANSWER_PREFIX = "The special magic {type} for {query} mentioned in the provided text is"
DEPTHS = [int(d) for d in np.round(np.linspace(0, 100, num=40, endpoint=True))]


@dataclass(frozen=True)
class Variant:
    task: str
    haystack: str  # "repeat" | "essay"
    value: str  # "numbers" | "uuids"


VARIANTS = {
    "sniah_1": Variant("sniah_1", "repeat", "numbers"),
    "sniah_2": Variant("sniah_2", "essay", "numbers"),
    "sniah_3": Variant("sniah_3", "essay", "uuids"),
}


class SniahError(BadInput):
    """A length or tokenizer that cannot hold an S-NIAH prompt; the message says what to do."""


@lru_cache(maxsize=1)
def _adjectives_and_nouns() -> tuple[tuple[str, ...], tuple[str, ...]]:
    """RULER's key vocabulary: wonderwords' adjective and noun lists (shipped with the package)."""
    import wonderwords

    categories = wonderwords.RandomWord()._categories
    return tuple(sorted(set(categories["adjectives"]))), tuple(sorted(set(categories["nouns"])))


def random_key(rng: random.Random) -> str:
    adjectives, nouns = _adjectives_and_nouns()
    index = rng.randrange(len(adjectives) * len(nouns))  # uniform over adjective-noun pairs
    return f"{adjectives[index // len(nouns)]}-{nouns[index % len(nouns)]}"


def random_value(kind: str, rng: random.Random) -> str:
    if kind == "numbers":
        return str(rng.randint(10**6, 10**7 - 1))
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def count_tokens(tokenizer, text: str) -> int:
    """As the LM wrapper will encode it (special tokens included)."""
    return len(tokenizer(text)["input_ids"])


@lru_cache(maxsize=64)
def _essay_sentences(haystack: Haystack, n_words: int) -> tuple[tuple[str, ...], int]:
    text, passes = haystack.take(n_words)
    return tuple(split_sentences(text.strip())), passes


def _context(variant: Variant, units: int, needle: str, rng: random.Random, haystack: Haystack | None):
    """(context, depth in percent, haystack passes) with the needle placed as RULER places it."""
    if variant.haystack == "repeat":
        sentences = [REPEAT_FILLER] * units
        index = rng.randrange(units) if units else 0
        sentences.insert(index, needle)
        return "\n".join(sentences), (100.0 * index / units if units else 0.0), 1
    sentences, passes = _essay_sentences(haystack, units) if units else ((), 1)
    depth = rng.choice(DEPTHS)
    at = int(len(sentences) * depth / 100)
    return " ".join([*sentences[:at], needle, *sentences[at:]]), float(depth), passes


def sample(variant: Variant, units: int, key: str, value: str, placement_seed: int, haystack) -> dict:
    """One record with `units` haystack units (filler lines or essay words) around the needle."""
    rng = random.Random(placement_seed)
    needle = NEEDLE.format(type_plural=variant.value, key=key, value=value)
    context, depth, passes = _context(variant, units, needle, rng, haystack)
    kind = variant.value[:-1]
    return {
        "input": TEMPLATE.format(type=kind, context=context, query=key),
        "gen_prefix": ANSWER_PREFIX.format(type=kind, query=key),
        "outputs": [value],
        "depth": depth,
        "key": key,
        "haystack_units": units,
        "haystack_passes": passes,
    }


def depth_used(task: str, record: dict) -> float:
    """Where the needle actually is: the percent of the haystack's characters before it. RULER puts it at the
    sentence boundary nearest the drawn depth; a haystack with few boundaries (one long line) moves it far
    from that (a drawn 92% placed at the very start), which the stored ``depth`` would not show."""
    kind = VARIANTS[task].value
    head, tail = TEMPLATE.split("{context}")
    head, tail = head.format(type=kind[:-1]), tail.format(type=kind[:-1], query=record["key"])
    context = record["input"][len(head): len(record["input"]) - len(tail)]
    needle = NEEDLE.format(type_plural=kind, key=record["key"], value=record["outputs"][0])
    haystack = len(context) - len(needle) - 1  # the needle and the separator beside it
    return round(100.0 * context.index(needle) / haystack, 1) if haystack > 0 else 0.0


def prompt_of(record: dict) -> str:
    """The text the model reads: lm-eval joins doc_to_text and gen_prefix with one space."""
    return record["input"] + " " + record["gen_prefix"]


def draws(task: str, length: int, samples: int, seed: int):
    """Each sample's (key, value, placement seed), in order: what generate() draws (str seeds are
    stable across processes)."""
    variant = VARIANTS[task]
    rng = random.Random(f"{seed}-{task}-{length}")
    for _ in range(samples):
        yield random_key(rng), random_value(variant.value, rng), rng.getrandbits(64)


def _probe(task: str, length: int, seed: int) -> tuple[str, str, int]:
    """The sample the haystack is sized on."""
    probe = random.Random(f"{seed}-{task}-{length}-probe")
    return random_key(probe), random_value(VARIANTS[task].value, probe), probe.getrandbits(64)


def smallest_length(task: str, tokenizer, haystack: Haystack | None, length: int, samples: int, seed: int) -> int:
    """The smallest length whose budget holds every sample of (task, length, samples, seed) with an
    empty haystack, plus the tokens to generate: below it a sample cannot be generated at all."""
    variant = VARIANTS[task]
    worst = 0
    for key, value, placement in [_probe(task, length, seed), *draws(task, length, samples, seed)]:
        record = sample(variant, 0, key, value, placement, haystack)
        worst = max(worst, count_tokens(tokenizer, prompt_of(record)))
    return worst + TOKENS_TO_GENERATE


def generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack: Haystack | None,
             progress=None) -> list[dict]:
    """``samples`` prompts of at most ``length - TOKENS_TO_GENERATE`` tokens for one task and length."""
    variant = VARIANTS[task]
    budget = length - TOKENS_TO_GENERATE

    def fits(units, key, value, placement_seed):
        record = sample(variant, units, key, value, placement_seed, haystack)
        tokens = count_tokens(tokenizer, prompt_of(record))
        return tokens <= budget, record, tokens

    # size the haystack on a probe sample: the largest unit count whose prompt fits (binary search)
    key, value, placement = _probe(task, length, seed)
    if not fits(0, key, value, placement)[0]:
        raise SniahError(f"length {length}: the {task} prompt alone needs more than {budget} tokens plus "
                         f"{TOKENS_TO_GENERATE} to generate; use a larger --lengths value")
    low, high = 0, 1
    grown_at, grown_to = 0, fits(0, key, value, placement)[2]  # the last unit count that added tokens, and its tokens
    while (probe := fits(high, key, value, placement))[0]:
        if probe[2] > grown_to:
            grown_at, grown_to = high, probe[2]
        elif high >= grown_at * 2 ** STALLED_DOUBLINGS and high >= 2 ** STALLED_DOUBLINGS:
            # RULER repeats a haystack without bound: what ends the search is text that stops adding tokens
            raise SniahError(f"length {length}: {high} haystack units encode to {probe[2]} tokens, no more than "
                             f"{grown_at} did; the tokenizer drops the haystack's text, so no length can be filled")
        low, high = high, high * 2
    while high - low > 1:
        mid = (low + high) // 2
        low, high = (mid, high) if fits(mid, key, value, placement)[0] else (low, mid)
    units = low

    records = []
    for index, (key, value, placement) in enumerate(draws(task, length, samples, seed)):
        n = units
        ok, record, tokens = fits(n, key, value, placement)
        while not ok:  # a longer key can push a sample over: shrink this one until it fits
            if n == 0:
                raise SniahError(f"length {length}: the {task} prompt for key {key!r} alone needs {tokens} tokens "
                                 f"plus {TOKENS_TO_GENERATE} to generate; use a larger --lengths value")
            n = max(0, n - max(1, n // 200))
            ok, record, tokens = fits(n, key, value, placement)
        records.append({"index": index, **record, "length": tokens + TOKENS_TO_GENERATE, "max_length": length})
        if progress is not None:
            progress.update(1)
    for record in records:
        if record["outputs"][0] not in record["input"]:
            raise RuntimeError(f"{task}: needle value missing from sample {record['index']}")
    return records


def dataset_key(task: str, tokenizer_fp: str, length: int, samples: int, seed: int, haystack: Haystack | None) -> dict:
    return {"generator": "sniah", "version": GENERATOR_VERSION, "task": task, "length": length,
            "samples": samples, "seed": seed, "tokenizer": tokenizer_fp,
            "haystack": haystack.fingerprint if VARIANTS[task].haystack == "essay" and haystack else None,
            **({"sentences": SPLITTER} if VARIANTS[task].haystack == "essay" else {})}


def dataset_path(key: dict) -> Path:
    return cache_root() / "sniah" / f"{key['task']}-L{key['length']}-n{key['samples']}-s{key['seed']}-{stable_hash(key)[:16]}.jsonl"


def load_or_generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack: Haystack | None,
                     progress=None, key: dict | None = None) -> tuple[list[dict], str, bool]:
    """(records, content sha256, reused from cache?); ``key``: the dataset key when already known."""
    key = key or dataset_key(task, tokenizer_fingerprint(tokenizer), length, samples, seed, haystack)
    return load_or_build(dataset_path(key), key,
                         lambda: generate(task, tokenizer, length, samples, seed, haystack, progress))
