"""RULER's VT, CWE and FWE samples: what each draws (with ccq-eval's seeded generators, per task and length), the
haystack sized with the model's own tokenizer, and the records frozen in the cache. compose.py writes each prompt from
its draws as NVIDIA/RULER does.

Sizing, as S-NIAH's (sniah/sizing.py): the whole prompt as the model reads it, answer prefix included, plus the
task's tokens to generate (RULER's: VT 30, CWE 120, FWE 50) fits the length; the haystack unit is a noise sentence
(VT), a distinct word (CWE) or a coded word of the text (FWE). RULER's own searches differ in their steps, not in
what fits. Two things RULER leaves undefined are refused instead: VT's worked example is sized to 500 tokens with at
least 5 noise sentences in RULER, whose search never ends where even that does not fit (a byte-level tokenizer);
here it takes fewer, down to none, and a tokenizer that cannot fit the example at all is refused; the task's own
haystack keeps RULER's least 5 sentences. CWE past the
8,166 words of wonderwords' lists (RULER falls back to a list kept in Git LFS) is refused with the largest length
that fits.
"""

from __future__ import annotations

import random
import string
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from ccq_eval.data.cache import cache_root, load_or_build, stable_hash, tokenizer_fingerprint
from ccq_eval.suites.ruler import TOKENS_TO_GENERATE, compose, qa, qa_data
from ccq_eval.suites.sniah import sizing
from ccq_eval.suites.sniah.sizing import SniahError, count_tokens, prompt_of

GENERATOR_VERSION = 1


@dataclass(frozen=True)
class Variant:
    task: str
    haystack: str = "none"  # no essay haystack (S-NIAH's driver and plugin ask); QA: its documents' source


VARIANTS = {task: Variant(task, "documents" if task in qa_data.SOURCES else "none") for task in TOKENS_TO_GENERATE}
VT_EXAMPLE_TOKENS = 500  # variable_tracking.py's main(): the worked example's budget
VT_LEAST_NOISES = 5  # variable_tracking.py's smallest haystack (its step): a length that cannot hold it is refused
FWE_WORD_LENGTH = 6  # --coded_wordlen
FWE_TOKENS_PER_WORD = 50  # vocab_size = (length - tokens to generate) // 50


@lru_cache(maxsize=1)
def cwe_words() -> tuple[str, ...]:
    """common_words_extraction.py's pool: wonderwords' nouns, adjectives and verbs, distinct, sorted, shuffled with
    Random(42)."""
    from wonderwords import random_word

    words = set()
    for name in ("nounlist.txt", "adjectivelist.txt", "verblist.txt"):
        words.update(random_word._get_words_from_text_file(name))
    return tuple(compose.ruler_shuffled(sorted(words)))


def chain_positions(placement: int, noises: int, lines: int) -> tuple[int, ...]:
    """Where a chain's lines go among ``noises`` sentences: RULER's sorted ``random.sample`` of indices; with fewer
    sentences than lines (which RULER cannot do) indices may repeat, keeping the lines in order."""
    rng = random.Random(placement)
    if noises >= lines:
        return tuple(sorted(rng.sample(range(noises), lines)))
    return tuple(sorted(rng.choices(range(noises + 1), k=lines)))


def distinct(count: int, draw) -> tuple[str, ...]:
    out: list[str] = []
    while len(out) < count:
        word = draw()
        if word not in out:
            out.append(word)
    return tuple(out)


def upper(rng: random.Random, length: int) -> str:
    return "".join(rng.choices(string.ascii_uppercase, k=length))


@dataclass(frozen=True)
class Draw:
    """One sample's draws that do not depend on its haystack's size; ``placement`` seeds what does (positions,
    sampled words)."""

    names: tuple[str, ...] = ()  # VT: the chain's variables
    value: str = ""  # VT: the chain's value
    example_names: tuple[str, ...] = ()  # VT: the worked example's variables, as randomised for this sample
    example_value: str = ""
    vocabulary: tuple[str, ...] = ()  # FWE: the ranked coded words
    question: int = 0  # QA: the question's index (RULER's: the sample's)
    placement: int = 0


def draw(task: str, length: int, rng: random.Random) -> Draw:
    if task == "ruler_vt":
        hops = compose.VT_HOPS + 1
        return Draw(names=distinct(hops, lambda: upper(rng, 5)), value=str(rng.randint(10000, 99998)),
                    example_names=tuple(upper(rng, 3) for _ in range(hops)),
                    example_value=str(rng.randint(10000, 99998)), placement=rng.getrandbits(64))
    if task == "ruler_fwe":
        size = (length - TOKENS_TO_GENERATE[task]) // FWE_TOKENS_PER_WORD
        words = distinct(size, lambda: compose.coded_word(rng, FWE_WORD_LENGTH))
        return Draw(vocabulary=tuple(compose.fwe_vocabulary(list(words))), placement=rng.getrandbits(64))
    return Draw(placement=rng.getrandbits(64))


# ---- one record from its draws and its haystack's size ------------------------------------------------------------

def vt_example(tokenizer, seed: int) -> tuple[int, compose.Chain]:
    """The dataset's one worked example (RULER draws it once, then randomises it per sample): 3-letter names, the
    value 12345, as many noise sentences as fit its 500 tokens."""
    rng = random.Random(f"{seed}-ruler-vt-example")
    names = distinct(compose.VT_HOPS + 1, lambda: upper(rng, 3))
    placement = rng.getrandbits(64)

    def chain(noises):
        return compose.Chain(names, compose.VT_ICL_VALUE, chain_positions(placement, noises, len(names)))

    def fits(noises):
        return count_tokens(tokenizer, compose.vt_worked_example(noises, chain(noises))) <= VT_EXAMPLE_TOKENS

    if not fits(0):
        raise SniahError(f"ruler_vt: this tokenizer needs more than {VT_EXAMPLE_TOKENS} tokens for RULER's worked "
                         "example alone (RULER's own generator never finishes on it); run ruler_vt with a subword "
                         "tokenizer")
    noises = 0
    while fits(noises + 1):
        noises += 1
    return noises, chain(noises)


def _public(record: dict) -> dict:
    """lm-eval reads the prompt as input + ' ' + gen_prefix: the answer prefix without its leading space."""
    prefix = record.pop("answer_prefix")
    return {**record, "gen_prefix": prefix[1:] if prefix.startswith(" ") else prefix}


def qa_build(task: str, length: int, source: qa_data.QaSource):
    """QA: units are documents; the sample's question is its index's (RULER takes them in order), the documents
    beside its own drawn from ``placement``. More documents than the source holds is refused, not repeated."""
    qa_set = source.qa_set
    total = len(qa_set.documents)

    def record(units, drawn):
        question = qa_set.questions[drawn.question % len(qa_set.questions)]
        count = min(max(units, len(question.context)), total)  # sizing never asks for more (qa_bound)
        chosen = qa.chosen_documents(question, total, count, random.Random(drawn.placement))
        return {**_public(qa.qa_record(question, [qa_set.documents[i] for i in chosen])), "haystack_units": count,
                "alternatives": True}  # any one reference answers (string_match_part)
    return record


def qa_bound(task: str, length: int, source: qa_data.QaSource | None) -> sizing.Bounded | None:
    """QA's documents are finite: a length that all of them still fit is refused (RULER would repeat them)."""
    if source is None:
        return None
    total = len(source.qa_set.documents)
    return sizing.Bounded(total, f"{task}: length {length} needs more than the {total} documents of {source.path}, "
                                 "so RULER would repeat them inside one prompt; use a smaller length or a larger source")


def build(task: str, length: int, tokenizer, seed: int, source: qa_data.QaSource | None = None):
    """(units, draw) -> record, for sizing.fitted_records."""
    if task in qa_data.SOURCES:
        return qa_build(task, length, source)
    if task == "ruler_vt":
        noises, example_chain = vt_example(tokenizer, seed)
        example = compose.vt_worked_example(noises, example_chain)

        def vt(units, drawn):
            chain = compose.Chain(drawn.names, drawn.value, chain_positions(drawn.placement, units, len(drawn.names)))
            randomised = compose.vt_randomised(example, drawn.example_names, drawn.example_value)
            return {**_public(compose.vt_record(units, chain, randomised)), "haystack_units": units}
        return vt
    if task == "ruler_cwe":
        (example_count, _, _), _ = compose.cwe_repeats(length)
        pool = cwe_words()

        def cwe(units, drawn):
            if compose.CWE_COMMON + units > len(pool):
                raise SniahError(f"ruler_cwe: length {length} needs more than the {len(pool)} words of wonderwords' "
                                 "lists (RULER's fallback list is not shipped); use a smaller length")
            rng = random.Random(drawn.placement)
            example_words = rng.sample(pool, example_count)
            words = rng.sample(pool, compose.CWE_COMMON + units)
            return {**_public(compose.cwe_record(length, example_words, words)), "haystack_units": units}
        return cwe
    return lambda units, drawn: {**_public(compose.fwe_record(units, list(drawn.vocabulary))), "haystack_units": units}


def draws(task: str, length: int, samples: int, seed: int) -> list[Draw]:
    rng = random.Random(f"{seed}-ruler-{task}-{length}")
    drawn = [draw(task, length, rng) for _ in range(samples)]
    if task in qa_data.SOURCES:  # RULER's questions in order, from the first
        drawn = [Draw(question=index, placement=d.placement) for index, d in enumerate(drawn)]
    return drawn


def _probe(task: str, length: int, seed: int) -> Draw:
    return draw(task, length, random.Random(f"{seed}-ruler-{task}-{length}-probe"))


QA_LEAST_DOCUMENTS = 10  # RULER's QA search never uses fewer (generate_samples' incremental); below it RULER never ends


def check_source_fills(task: str, tokenizer, haystack, length: int, seed: int) -> None:
    """QA: refused in one line where every document of the source still fits the length (the sizing would find
    the same; this is early, before a model loads)."""
    source = _source(task, haystack)
    if source is None:
        return
    bound = qa_bound(task, length, source)
    record = build(task, length, tokenizer, seed, source)(bound.units, _probe(task, length, seed))
    if count_tokens(tokenizer, prompt_of(record)) + TOKENS_TO_GENERATE[task] <= length:
        raise SniahError(bound.refusal)


def least_haystack(task: str) -> str:
    """The smallest haystack RULER builds a prompt with, in words (what a too-short length is refused against)."""
    if task == "ruler_vt":
        return f"RULER's least {VT_LEAST_NOISES} noise sentences"
    if task in qa_data.SOURCES:
        return f"RULER's least {QA_LEAST_DOCUMENTS} documents"
    return "an empty haystack"


def least_units(task: str) -> int:
    return VT_LEAST_NOISES if task == "ruler_vt" else QA_LEAST_DOCUMENTS if task in qa_data.SOURCES else 0


def _source(task: str, sources) -> qa_data.QaSource | None:
    """The QA task's loaded source from the driver's or plugin's ``haystack`` argument (task -> source)."""
    if task not in qa_data.SOURCES:
        return None
    if not sources or task not in sources:
        raise qa_data.QaDataError(f"{task}: no documents were loaded; put them in DATA_DIR/ruler/ or run "
                                  f"`{qa_data.FETCH_COMMAND}`")
    return sources[task]


def smallest_length(task: str, tokenizer, haystack, length: int, samples: int, seed: int) -> int:
    """As S-NIAH's (its driver and plugin call both alike); ``haystack``: the QA tasks' sources (task -> source)."""
    return sizing.smallest_length(tokenizer, build(task, length, tokenizer, seed, _source(task, haystack)),
                                  [_probe(task, length, seed), *draws(task, length, samples, seed)],
                                  least_units(task), TOKENS_TO_GENERATE[task])


def generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack=None, progress=None) -> list[dict]:
    """``samples`` records whose prompt plus the task's tokens to generate fit ``length``."""
    source = _source(task, haystack)
    return sizing.fitted_records(task, tokenizer, length, build(task, length, tokenizer, seed, source),
                                 draws(task, length, samples, seed), _probe(task, length, seed), least_units(task),
                                 progress, TOKENS_TO_GENERATE[task],
                                 answers_in_prompt=source is None,  # HotpotQA answers yes / no
                                 most=qa_bound(task, length, source))


def dataset_key(task: str, tokenizer_fp: str, length: int, samples: int, seed: int, haystack=None) -> dict:
    source = _source(task, haystack)
    return {"generator": "ruler", "version": GENERATOR_VERSION, "task": task, "length": length, "samples": samples,
            "seed": seed, "tokenizer": tokenizer_fp, **({"documents": source.fingerprint} if source else {})}


def dataset_path(key: dict) -> Path:
    return (cache_root() / "ruler"
            / f"{key['task']}-L{key['length']}-n{key['samples']}-s{key['seed']}-{stable_hash(key)[:16]}.jsonl")


def load_or_generate(task: str, tokenizer, length: int, samples: int, seed: int, haystack=None, progress=None,
                     key: dict | None = None) -> tuple[list[dict], str, bool]:
    """(records, content sha256, reused from cache?)."""
    key = key or dataset_key(task, tokenizer_fingerprint(tokenizer), length, samples, seed, haystack)
    return load_or_build(dataset_path(key), key,
                         lambda: generate(task, tokenizer, length, samples, seed, haystack, progress=progress))


__all__ = ["TOKENS_TO_GENERATE", "VARIANTS", "SniahError", "dataset_key", "generate", "load_or_generate",
           "prompt_of", "smallest_length"]
