"""A BABILong sample at a model's own length, as the reference generates one (``SentenceSampler`` with ``shuffle=True``
and ``NoiseInjectionDataset`` in booydar/babilong's babilong_utils.py), in the model's tokens: background sentences
(from a random point of a random document, split by an untrained Punkt as the reference's is, each tokenized with a
leading space, those under 10 tokens skipped) until the sample's size is reached, the last cut to fit; the bAbI
statements, each tokenized with a leading space, dropped in order at random places between the sentences (drawn with
replacement, sorted); the whole decoded. The sample's size is what the prompt leaves at the unit's length after the
template, the question and the 20 tokens to generate."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np

from ccq_eval.suites.babilong.babi import BabiError, Story
from ccq_eval.suites.babilong.prompts import formatted_input

MIN_SENTENCE_TOKENS = 10  # SentenceSampler's min_sentence_len
OUTPUT_TOKENS = 20  # run_model_on_babilong.py's max_new_tokens
CHARACTERS_PER_TOKEN_READ = 10  # the reference cuts a document at sample_size * 10 characters before splitting it


class BackgroundSampler:
    """Background sentences in the model's tokens, drawn as the reference's shuffling sampler draws them."""

    def __init__(self, documents: list[str], tokenizer, rng: np.random.Generator):
        from nltk.tokenize.punkt import PunktSentenceTokenizer

        if not any(documents):
            raise ValueError("the haystack holds no text")
        self.documents, self.tokenizer, self.rng = documents, tokenizer, rng
        self.splitter = PunktSentenceTokenizer()  # untrained, as the reference's
        self.queue: deque[str] = deque()

    def _refill(self, size: int) -> None:
        while not self.queue:
            text = self.documents[int(self.rng.choice(len(self.documents)))]
            if not text:
                continue
            text = text[int(self.rng.choice(len(text))):][:size * CHARACTERS_PER_TOKEN_READ]
            self.queue = deque(self.splitter.tokenize(text)[1:-1])  # a cut sentence at either end is left out

    def sample(self, size: int) -> list[list[int]]:
        """Sentences (token ids) whose lengths add up to exactly ``size`` (the last cut short)."""
        chosen, total = [], 0
        while total < size:
            self._refill(size)
            sentence = self.queue.popleft()
            ids = self.tokenizer.encode(" " + sentence, add_special_tokens=False)
            if len(ids) < MIN_SENTENCE_TOKENS:
                continue
            chosen.append(ids)
            total += len(ids)
        if total > size:
            chosen[-1] = chosen[-1][:len(chosen[-1]) - (total - size)]
        return chosen


@dataclass(frozen=True)
class NoisySample:
    context: str  # background and statements, decoded
    fact_depths: tuple[float, ...]  # where each statement starts, % of the context's tokens
    context_tokens: int


def inject(story: Story, sampler: BackgroundSampler | None, tokenizer, size: int,
           rng: np.random.Generator) -> NoisySample:
    """``size`` tokens of context: the story's statements among background sentences (none without a sampler)."""
    facts = [tokenizer.encode(" " + fact, add_special_tokens=False) for fact in story.facts]
    background = sampler.sample(max(0, size - sum(len(f) for f in facts))) if sampler is not None else []
    places = np.sort(rng.choice(len(background) + 1, len(facts)))
    pieces: list[list[int]] = []
    starts, at = [], 0  # where each statement starts, in tokens
    for slot in range(len(background) + 1):
        for fact, place in zip(facts, places):
            if place == slot:
                starts.append(at)
                pieces.append(fact)
                at += len(fact)
        if slot < len(background):
            pieces.append(background[slot])
            at += len(background[slot])
    tokens = [token for piece in pieces for token in piece]
    depths = tuple(round(100.0 * start / max(1, len(tokens)), 2) for start in starts)
    return NoisySample(tokenizer.decode(tokens).strip(), depths, len(tokens))


def prompt_overhead(task: str, question: str, tokenizer, **variant) -> int:
    """Tokens of the prompt around an empty context (special tokens the tokenizer adds included)."""
    return len(tokenizer(formatted_input(task, "", question, **variant))["input_ids"])


def _record(story: Story, prompt: str, noisy: NoisySample, tokens: int) -> dict:
    return {"prompt": prompt, "question": story.question, "target": story.answer, "facts": list(story.facts),
            "references": list(story.references), "fact_depths": list(noisy.fact_depths),
            "context_tokens": noisy.context_tokens, "prompt_tokens": tokens}


def statements_alone(task: str, story: Story, tokenizer, **variant) -> dict:
    """The sample at length 0 (the reference's 0k): the statements alone, each tokenized with a leading space, as the
    noise injector joins them when it has no room for background."""
    noisy = inject(story, None, tokenizer, 0, np.random.default_rng(0))
    prompt = formatted_input(task, noisy.context, story.question, **variant)
    return _record(story, prompt, noisy, len(tokenizer(prompt)["input_ids"]))


def sample_at_length(task: str, story: Story, documents: list[str], tokenizer, length: int, seed,
                     **variant) -> dict:
    """One sample whose whole prompt and 20 generated tokens fit ``length`` tokens: the context sized to what the
    template leaves, built again a little smaller when decoding and encoding again grows it (the same draws each try).
    ``seed``: what numpy's default_rng takes (an int, or a sequence of them). Length 0: the statements alone."""
    if length == 0:
        return statements_alone(task, story, tokenizer, **variant)
    size = length - OUTPUT_TOKENS - prompt_overhead(task, story.question, tokenizer, **variant)
    facts = sum(len(tokenizer.encode(" " + fact, add_special_tokens=False)) for fact in story.facts)
    if size < facts:
        raise BabiError(f"--lengths {length}: a {task} prompt with its {len(story.facts)} statements needs "
                        f"{length - size + facts} tokens at least; use a larger length")
    for _ in range(8):
        rng = np.random.default_rng(seed)
        noisy = inject(story, BackgroundSampler(documents, tokenizer, rng), tokenizer, size, rng)
        prompt = formatted_input(task, noisy.context, story.question, **variant)
        tokens = len(tokenizer(prompt)["input_ids"])
        if tokens + OUTPUT_TOKENS <= length:
            return _record(story, prompt, noisy, tokens)
        size -= tokens + OUTPUT_TOKENS - length
    raise ValueError(f"{task}: no context fits {length} tokens")
