"""S-NIAH data, faithful to RULER's niah_single_1/2/3 (as lm-eval's ``ruler`` port writes them).

- S-NIAH-1: the five-sentence filler repeated; the needle replaces no filler, it is inserted between
  two repetitions at a random position; keys are adjective-noun pairs, values 7-digit numbers.
- S-NIAH-2: an essay haystack; the needle goes at one of 40 evenly spaced depths, at a sentence
  boundary; 7-digit values.
- S-NIAH-3: as S-NIAH-2 with UUID values.

The haystack is sized with the model's own tokenizer so that the whole prompt, answer prefix
included, plus the tokens to generate fits the length (sizing.py: a binary search where RULER steps).
Generated data is frozen in the cache (see ``cache``).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from ccq_eval.data.cache import cache_root, load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.sniah import sizing
from ccq_eval.suites.sniah.haystack import Haystack
from ccq_eval.suites.sniah.sentences import SPLITTER, split_sentences
from ccq_eval.suites.sniah.protocol import TOKENS_TO_GENERATE  # noqa: F401 (read as sniah.TOKENS_TO_GENERATE)
from ccq_eval.suites.sniah.sizing import SniahError, count_tokens, prompt_of  # noqa: F401 (this module's API)

GENERATOR_VERSION = 1
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


@lru_cache(maxsize=64)
def essay_sentences(haystack: Haystack, n_words: int) -> tuple[tuple[str, ...], int]:
    """(the first ``n_words`` of the haystack split into RULER's sentences, passes over it); every essay task's."""
    text, passes = haystack.take(n_words)
    return tuple(split_sentences(text.strip())), passes


def _context(variant: Variant, units: int, needle: str, rng: random.Random, haystack: Haystack | None):
    """(context, depth in percent, haystack passes) with the needle placed as RULER places it."""
    if variant.haystack == "repeat":
        sentences = [REPEAT_FILLER] * units
        index = rng.randrange(units) if units else 0
        sentences.insert(index, needle)
        return "\n".join(sentences), (100.0 * index / units if units else 0.0), 1
    sentences, passes = essay_sentences(haystack, units) if units else ((), 1)
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


def _build(variant: Variant, haystack: Haystack | None):
    return lambda units, drawn: sample(variant, units, *drawn, haystack)


def smallest_length(task: str, tokenizer, haystack: Haystack | None, length: int, samples: int, seed: int) -> int:
    """The smallest length whose budget holds every sample of (task, length, samples, seed) with an
    empty haystack, plus the tokens to generate: below it a sample cannot be generated at all."""
    drawn = [_probe(task, length, seed), *draws(task, length, samples, seed)]
    return sizing.smallest_length(tokenizer, _build(VARIANTS[task], haystack), drawn)


def generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack: Haystack | None,
             progress=None) -> list[dict]:
    """``samples`` prompts of at most ``length - TOKENS_TO_GENERATE`` tokens for one task and length, the
    haystack sized on a probe sample (sizing.py)."""
    return sizing.fitted_records(task, tokenizer, length, _build(VARIANTS[task], haystack),
                                 list(draws(task, length, samples, seed)), _probe(task, length, seed),
                                 progress=progress)


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
    records, fingerprint, cached = load_or_build(dataset_path(key), key,
                                                 lambda: generate(task, tokenizer, length, samples, seed, haystack,
                                                                  progress))
    return sizing.refuse_repeats(task, length, records), fingerprint, cached
