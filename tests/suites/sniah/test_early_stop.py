"""S-NIAH's early stop: a row stops decoding once every needle value is in its output. Lossless, because
RULER's string_match_all only asks whether each value is contained in the output: shown on random outputs
against the full strings, and on a real tiny model's greedy decoding through the model's engine (the driver's own
call) against the 128-token decoding of the same prompts (same scores and answer prefixes, fewer decoding steps)."""

from __future__ import annotations

import functools
import random

from ccq_eval.generation.generator import EngineGenerator
from ccq_eval.generation.text import Ask, completion_text, engine_request
from ccq_eval.suites.sniah.scoring import all_values_found, answer_prefix, ruler_string_match
from ccq_eval.models import load_model


def first_stop(text: str, values: list[str]) -> str:
    """The shortest prefix on which the rule fires (the whole text if it never does)."""
    for end in range(len(text) + 1):
        if all_values_found(text[:end], values):
            return text[:end]
    return text


def test_the_rule_never_changes_a_score_on_random_outputs():
    rng = random.Random(0)
    alphabet = "0123456789 abc\n\t-"
    for _ in range(400):
        values = ["".join(rng.choice("0123456789") for _ in range(rng.randint(1, 7))) for _ in range(rng.randint(1, 4))]
        parts = [rng.choice(values + ["".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))])
                 for _ in range(rng.randint(1, 8))]
        full = "".join(parts)
        stopped = first_stop(full, values)
        assert full.startswith(stopped)
        assert ruler_string_match(stopped, values) == ruler_string_match(full, values)
        assert answer_prefix(stopped, values[0]) == answer_prefix(full, values[0])


def generate(generator, prompts, values=None):
    """(texts, decoding steps asked of the predicates): S-NIAH's asks, each stopped once its values are out."""
    asks = [Ask(i, p, 128, stop_when=None if values is None else functools.partial(all_values_found, values=values[i]))
            for i, p in enumerate(prompts)]
    results = generator.generate([engine_request(ask, generator.tokenizer, 512) for ask in asks])
    return ([completion_text(generator.tokenizer, r.tokens, ()) for r in results], sum(r.predicate_steps for r in results))


def test_stopping_rows_score_as_full_decoding_in_fewer_steps():
    model, tokenizer, _ = load_model("zoo:gla-tiny", device="cpu")  # trained on essays: it writes ASCII text
    engine = EngineGenerator(model, tokenizer, batch_size=2)
    prompts = ["The special magic number is 4417. What is it? ", "Remember 93 and 27; recall them: ",
               "no needle here at all, just words: "]
    full, steps = generate(engine, prompts)  # no predicates: every row decodes its 128 tokens
    assert [len(text.encode()) for text in full] == [128] * 3 and steps == 0, full  # bytes: one token each
    # needle values that the model's output does contain (as a retrieving model's would), and one it never does
    values = [[full[0][5:9]], [full[1][2:5], full[1][30:33]], ["needle-never-said"]]
    early, steps = generate(engine, prompts, values)
    for text, stopped, v in zip(full, early, values):
        assert text.startswith(stopped)
        assert ruler_string_match(stopped, v) == ruler_string_match(text, v)
        assert answer_prefix(stopped, v[0]) == answer_prefix(text, v[0])
    assert early[0] == first_stop(full[0], values[0]) and early[1] == first_stop(full[1], values[1])
    assert early[2] == full[2]  # never satisfied: decodes to the budget
    assert steps == len(early[0]) + len(early[1]) + 128 < 3 * 128, steps
