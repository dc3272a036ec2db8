"""RULER's five multi-needle NIAH tasks, as NVIDIA/RULER's scripts/synthetic.yaml configures
scripts/data/synthetic/niah.py, with S-NIAH's vocabulary, essay haystack and sentence splitter:

- niah_multikey_1: essay haystack, four needles with distinct word keys, one key asked;
- niah_multikey_2: the haystack is itself needles (word keys, number values), one key asked;
- niah_multikey_3: as multikey_2 with uuid keys and uuid values;
- niah_multivalue: essay haystack, four values for one key, all asked;
- niah_multiquery: essay haystack, four keys, all four asked at once.

As niah.py: the template is the plural one ("Some special magic numbers are hidden ..."), made singular where one
value is asked, and the answer prefix with it; the needles are put in one fixed order (niah.py shuffles them with
``random.Random(random_seed)``, the same permutation for every sample); an essay's needles go at distinct depths of
the 40 it draws from, at sentence boundaries, a needle haystack's at distinct random lines; the asked keys are
drawn in random order and the answers are their values in that order. Unlike niah.py, keys within a sample are
distinct (a repeated key would ask for two answers at once). The haystack is sized with the model's own
tokenizer (S-NIAH's sizing.py: the prompt with its answer prefix plus the tokens to generate fit the length).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from ccq_eval.data.cache import cache_root, load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.sniah import data as sniah
from ccq_eval.suites.sniah import sizing
from ccq_eval.suites.sniah.sentences import SPLITTER

GENERATOR_VERSION = 1
TEMPLATE = ("Some special magic {type} are hidden within the following text. Make sure to memorize it. "
            "I will quiz you about the {type} afterwards.\n{context}\n"
            "What are all the special magic {type} for {query} mentioned in the provided text?")
ANSWER_PREFIX = "The special magic {type} for {query} mentioned in the provided text are"
RULER_SHUFFLE_SEED = 42  # niah.py's default --random_seed, which seeds its one needle permutation


@dataclass(frozen=True)
class Variant:
    task: str
    haystack: str  # "essay" | "needle"
    key: str  # "words" | "uuids"
    value: str  # "numbers" | "uuids"
    keys: int = 1
    values: int = 1
    queries: int = 1

    @property
    def key_count(self) -> int:  # niah.py: num_needle_k = max(num_needle_k, num_needle_q)
        return max(self.keys, self.queries)

    @property
    def needles(self) -> int:
        return self.key_count * self.values

    @property
    def singular(self) -> bool:  # niah.py: one value asked reads "A special magic number is ..."
        return self.queries * self.values == 1


VARIANTS = {
    "niah_multikey_1": Variant("niah_multikey_1", "essay", "words", "numbers", keys=4),
    "niah_multikey_2": Variant("niah_multikey_2", "needle", "words", "numbers"),
    "niah_multikey_3": Variant("niah_multikey_3", "needle", "uuids", "uuids"),
    "niah_multivalue": Variant("niah_multivalue", "essay", "words", "numbers", values=4),
    "niah_multiquery": Variant("niah_multiquery", "essay", "words", "numbers", queries=4),
}


@dataclass(frozen=True)
class Draw:
    """What one sample asks, drawn before its haystack is sized: keys, each key's values, the asked keys' indices
    (in the order asked) and the seed of where the needles go (and, for a needle haystack, its filler lines)."""

    keys: tuple[str, ...]
    values: tuple[tuple[str, ...], ...]
    asked: tuple[int, ...]
    placement: int


def random_of(kind: str, rng: random.Random) -> str:
    return sniah.random_key(rng) if kind == "words" else sniah.random_value(kind, rng)


def template_for(variant: Variant) -> tuple[str, str, str]:
    """(template, answer prefix, the value type as written), made singular as niah.py does for one value asked."""
    if not variant.singular:
        return TEMPLATE, ANSWER_PREFIX, variant.value
    singular = TEMPLATE.replace("Some", "A").replace("are all", "is").replace("are", "is").replace("answers", "answer")
    return singular, ANSWER_PREFIX.replace(" are", " is"), variant.value[:-1]


def draw(variant: Variant, rng: random.Random) -> Draw:
    keys: list[str] = []
    while len(keys) < variant.key_count:
        key = random_of(variant.key, rng)
        if key not in keys:
            keys.append(key)
    values = tuple(tuple(random_of(variant.value, rng) for _ in range(variant.values)) for _ in keys)
    return Draw(tuple(keys), values, tuple(rng.sample(range(len(keys)), variant.queries)), rng.getrandbits(64))


def needle_order(count: int) -> list[int]:
    """niah.py's order of a sample's needles (keys in draw order, each key's values in order), the same for
    every sample: the permutation ``random.Random(random_seed).shuffle`` makes of ``count`` needles."""
    order = list(range(count))
    random.Random(RULER_SHUFFLE_SEED).shuffle(order)
    return order


def compose(variant: Variant, drawn: Draw, filler: list[str], positions: list[int]) -> dict:
    """One record from its draws, the haystack's units (an essay's sentences, or a needle haystack's lines) and
    where the needles go (niah.py's draws: essay depths in percent from the 40, or line indices)."""
    needle = sniah.NEEDLE.format
    needles = [needle(type_plural=variant.value, key=k, value=v) for k, vs in zip(drawn.keys, drawn.values) for v in vs]
    needles = [needles[i] for i in needle_order(len(needles))]
    if variant.haystack == "essay":
        cuts = [0, *sorted(int(len(filler) * depth / 100) for depth in positions), len(filler)]
        parts = []
        for i in range(1, len(cuts)):
            parts.append(" ".join(filler[cuts[i - 1]:cuts[i]]))
            if i - 1 < len(needles):
                parts.append(needles[i - 1])
        context = " ".join(parts)
        drawn_depths = sorted(float(d) for d in positions)  # needle i goes at the i-th smallest depth
    else:
        lines = list(filler)
        for index, text in zip(sorted(positions, reverse=True), needles):
            lines.insert(index, text)
        context = "\n".join(lines)
        drawn_depths = [100.0 * i / max(1, len(filler)) for i in sorted(positions, reverse=True)]
    queries = [drawn.keys[i] for i in drawn.asked]
    answers = [v for i in drawn.asked for v in drawn.values[i]]
    query = ", ".join(queries[:-1]) + ", and " + queries[-1] if len(queries) > 1 else queries[0]
    template, prefix, kind = template_for(variant)
    expected = [needle(type_plural=variant.value, key=drawn.keys[i], value=v) for i in drawn.asked for v in drawn.values[i]]
    return {"input": template.format(type=kind, context=context, query=query),
            "gen_prefix": prefix.format(type=kind, query=query), "outputs": answers, "keys": queries,
            # each answer's needle: its drawn depth (%), and where it sits (% of the haystack's characters before it)
            "depths": [drawn_depths[needles.index(text)] for text in expected],
            "depths_used": characters_before(context, needles, expected)}


def characters_before(context: str, needles: list[str], expected: list[str]) -> list[float]:
    """For each expected needle, the percent of the haystack's characters (needles and their separators left
    out) that come before it: where a needle actually is, whatever depth was drawn."""
    starts = {text: context.index(text) for text in needles}
    haystack = len(context) - sum(len(text) + 1 for text in needles)
    if haystack <= 0:
        return [0.0 for _ in expected]
    return [round(100.0 * (starts[text] - sum(len(n) + 1 for n in needles if starts[n] < starts[text])) / haystack, 1)
            for text in expected]


def sample(variant: Variant, units: int, drawn: Draw, haystack) -> dict:
    """One record with ``units`` haystack units (essay words, or filler needle lines) around the needles."""
    rng = random.Random(drawn.placement)
    if variant.haystack == "essay":
        filler, passes = sniah.essay_sentences(haystack, units) if units else ((), 1)
        positions = rng.sample(sniah.DEPTHS, variant.needles)
    else:
        filler = [sniah.NEEDLE.format(type_plural=variant.value, key=random_of(variant.key, rng),
                                      value=random_of(variant.value, rng)) for _ in range(units)]
        passes = 1
        positions = rng.sample(range(units), variant.needles)
    return {**compose(variant, drawn, list(filler), positions), "haystack_units": units, "haystack_passes": passes}


def least_units(variant: Variant) -> int:
    """A needle haystack holds at least one filler line per needle (niah.py samples that many line indices)."""
    return variant.needles if variant.haystack == "needle" else 0


def draws(task: str, length: int, samples: int, seed: int) -> list[Draw]:
    rng = random.Random(f"{seed}-multi-{task}-{length}")
    return [draw(VARIANTS[task], rng) for _ in range(samples)]


def _probe(task: str, length: int, seed: int) -> Draw:
    return draw(VARIANTS[task], random.Random(f"{seed}-multi-{task}-{length}-probe"))


def _build(variant: Variant, haystack):
    return lambda units, drawn: sample(variant, units, drawn, haystack)


def smallest_length(task: str, tokenizer, haystack, length: int, samples: int, seed: int) -> int:
    variant = VARIANTS[task]
    return sizing.smallest_length(tokenizer, _build(variant, haystack),
                                  [_probe(task, length, seed), *draws(task, length, samples, seed)], least_units(variant))


def generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack, progress=None) -> list[dict]:
    """``samples`` prompts of at most ``length - TOKENS_TO_GENERATE`` tokens (prompt and answer prefix)."""
    variant = VARIANTS[task]
    return sizing.fitted_records(task, tokenizer, length, _build(variant, haystack), draws(task, length, samples, seed),
                                 _probe(task, length, seed), least_units(variant), progress)


def dataset_key(task: str, tokenizer_fp: str, length: int, samples: int, seed: int, haystack) -> dict:
    essay = VARIANTS[task].haystack == "essay"
    return {"generator": "multi_niah", "version": GENERATOR_VERSION, "task": task, "length": length,
            "samples": samples, "seed": seed, "tokenizer": tokenizer_fp,
            "haystack": haystack.fingerprint if essay and haystack else None, **({"sentences": SPLITTER} if essay else {})}


def dataset_path(key: dict) -> Path:
    return (cache_root() / "multi_niah"
            / f"{key['task']}-L{key['length']}-n{key['samples']}-s{key['seed']}-{stable_hash(key)[:16]}.jsonl")


def load_or_generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack, progress=None,
                     key: dict | None = None) -> tuple[list[dict], str, bool]:
    """(records, content sha256, reused from cache?); ``key``: the dataset key when already known."""
    key = key or dataset_key(task, tokenizer_fingerprint(tokenizer), length, samples, seed, haystack)
    records, fingerprint, cached = load_or_build(
        dataset_path(key), key, lambda: generate(task, tokenizer, length, samples, seed, haystack, progress))
    return sizing.refuse_repeats(task, length, records), fingerprint, cached
