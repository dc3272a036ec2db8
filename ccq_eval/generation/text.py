"""Text in and out of the engine, as lm-eval's HF model reads a prompt and returns a generation, written once: the
generating suites call these directly and `CCQEvalLM.generate_until` (lm-eval's own generating tasks, stock
`lm_eval --include_path tasks`) calls the same, so both routes give the same tokens and the same text."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from ccq_eval.generation.request import Request


class PromptTooLong(RuntimeError):
    """A prompt that would have to be truncated to fit the context budget (it fails its unit, with this reason)."""


def prompt_ids(tokenizer, prompt: str) -> tuple[int, ...]:
    """The prompt's token ids as HFLM encodes a causal model's context: the tokenizer's own special tokens (a
    SentencePiece model's BOS; none for a BPE without one), no truncation."""
    return tuple(tokenizer(prompt, truncation=False)["input_ids"])


def eos_text(tokenizer) -> str | None:
    """The EOS token as text (lm-eval adds it to every request's stop strings); None for a tokenizer without one."""
    eos = tokenizer.eos_token_id
    return None if eos is None else tokenizer.decode(eos, skip_special_tokens=False)


def stop_strings(tokenizer, until: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    """A request's stop strings: its own and the EOS token's text (lm-eval's handle_stop_sequences)."""
    eos = eos_text(tokenizer)
    return tuple(until) + ((eos,) if eos is not None and eos not in until else ())


def eos_string_ids(tokenizer, eos_strings: tuple[str, ...] | list[str]) -> frozenset[int]:
    """The token ids that end a row for a task's ``eos_strings`` (LongBench's SAMSum ends at a newline): the last token
    of each string, as LongBench's pred.py appends it to the EOS ids."""
    return frozenset(tokenizer.encode(s, add_special_tokens=False)[-1] for s in eos_strings)


def model_stop_ids(model, tokenizer) -> frozenset[int]:
    """The model's and the tokenizer's EOS ids (a generation config may list several)."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = {*(configured if isinstance(configured, list) else [configured]), tokenizer.eos_token_id}
    return frozenset(i for i in ids if i is not None)


def completion_text(tokenizer, tokens: list[int], stops: tuple[str, ...]) -> str:
    """The generated tokens as lm-eval returns them: decoded without special tokens, then cut at the first occurrence
    of each stop string in turn (its postprocess_generated_text)."""
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    for stop in stops:
        if stop:
            text = text.split(stop)[0]
    return text


@dataclass(frozen=True)
class Ask:
    """What one sample asks of generation."""

    index: int  # the sample's index in its unit's records
    prompt: str  # the full context, as the task's plugin gives it to lm-eval
    max_new_tokens: int
    until: tuple[str, ...] = ()  # stop strings (the task YAML's ``until``); the EOS token's text is added
    eos_strings: tuple[str, ...] = ()  # strings whose last token ends the row after the first token (``eos_strings``)
    stop_when: Callable[[str], bool] | None = None  # ends the row once it holds on the decoded continuation
    score: str | None = None  # a continuation whose mean NLL per token the prefill measures (needs a scoring model)


def engine_request(ask: Ask, tokenizer, budget: int, scores: bool = True) -> Request:
    """The engine's request for one ask: the prompt's ids, its stop strings and EOS-string ids (the model's own EOS
    ids are the model's to add), the predicate, and the continuation to score (only of a model that scores text)."""
    ids = prompt_ids(tokenizer, ask.prompt)
    if len(ids) > budget - ask.max_new_tokens:
        raise PromptTooLong(f"a prompt of {len(ids)} tokens does not fit the budget of {budget - ask.max_new_tokens} "
                            f"({budget} minus the {ask.max_new_tokens} tokens to generate); it would be truncated")
    continuation = (tuple(tokenizer(ask.score, add_special_tokens=False)["input_ids"])
                    if scores and ask.score is not None else ())
    return Request(ids, ask.max_new_tokens, eos_string_ids(tokenizer, ask.eos_strings), 1 if ask.eos_strings else 0,
                   stop_strings(tokenizer, ask.until), ask.stop_when, continuation)
