"""lm/wrapper.py's CCQEvalLM on its own (no suite), as a checkpoint's evaluand builds it: it implements the adapter
interface, holds the budget for one block only, refuses to truncate, ends generation at ``eos_strings``; the engine
scores a continuation's NLL from the decoding prefill equal to lm-eval's loglikelihood, its reference; the evaluand's
``generate`` (the suites' call) and lm-eval's ``generate_until`` give the same text."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from ccq_eval.generation.text import Ask, completion_text, engine_request, model_stop_ids
from ccq_eval.lm.adapter import ModelAdapter
from ccq_eval.generation.generator import Generator
from ccq_eval.lm.wrapper import PromptTooLong
from ccq_eval.models import load_model
from ccq_eval.run import checkpoint_evaluand


@pytest.fixture(scope="module")
def evaluand():
    model, tokenizer, provenance = load_model("zoo:gla-tiny", device="cpu")
    return checkpoint_evaluand(model, tokenizer, provenance, max_length=256, batch_size=2)


@pytest.fixture(scope="module")
def lm(evaluand):
    return evaluand.lm


def generate(lm, prompts, tokens=8, **kwargs):
    gen = {"do_sample": False, "temperature": 0.0, "max_gen_toks": tokens, "until": [], **kwargs}
    return lm.generate_until([Instance("generate_until", {}, (p, dict(gen)), i) for i, p in enumerate(prompts)])


def test_the_real_adapter_implements_the_interface(evaluand, lm):
    assert isinstance(lm, ModelAdapter) and (lm.rank, lm.world_size) == (0, 1)
    assert isinstance(evaluand.generator, Generator) and evaluand.scores_text and evaluand.lm is lm
    assert evaluand.tokenizer_path.endswith("gla-tiny") and evaluand.model is lm.model


def test_budget_holds_for_its_block_only(lm):
    with pytest.raises(RuntimeError):
        with lm.budget(64):
            assert lm.max_length == 64
            raise RuntimeError
    assert lm.max_length == 256


def test_a_prompt_past_the_budget_is_refused_not_cut(lm):
    with lm.budget(64), pytest.raises(PromptTooLong, match="would be truncated"):
        generate(lm, ["x" * 200])
    with lm.budget(64), pytest.raises(PromptTooLong, match="exceeds max_length 64"):
        lm.loglikelihood([Instance("loglikelihood", {}, ("y" * 60, " z" * 10), 0)])


def test_eos_strings_end_generation_at_their_last_token(lm):
    newline = lm.tokenizer.encode("\n", add_special_tokens=False)[-1]
    request = engine_request(Ask(0, "abc", 8, eos_strings=("\n",)), lm.tokenizer, 256)
    assert request.stop_ids == {newline} and request.min_new_tokens == 1
    assert engine_request(Ask(0, "abc", 8), lm.tokenizer, 256).stop_ids == frozenset()
    assert lm.tokenizer.eos_token_id in model_stop_ids(lm.model, lm.tokenizer)  # the model's own: added by generate


def test_generate_and_generate_until_give_the_same_text(evaluand, lm):
    prompts = ["The special magic number for quiet-river is 4417. The number is", "Some other words, then", "A"]
    for kwargs in ({}, {"until": ["e"]}, {"eos_strings": [" "]}):
        asks = [Ask(i, p, 12, tuple(kwargs.get("until", ())), tuple(kwargs.get("eos_strings", ())))
                for i, p in enumerate(prompts)]
        results = evaluand.generate([engine_request(a, lm.tokenizer, 256) for a in asks])
        texts = [completion_text(lm.tokenizer, r.tokens, engine_request(a, lm.tokenizer, 256).until)
                 for a, r in zip(asks, results)]
        assert texts == generate(lm, prompts, 12, **kwargs)
    assert any(len(t) < 12 for t in generate(lm, prompts, 12, until=["e"]))  # the stop string cut something


def test_continuation_nlls_from_the_prefill_equal_loglikelihood(evaluand, lm):
    prompts = ["The special magic number for quiet-river is 4417. The number is", "Some other words, then"]
    answers = [" 4417.", " words."]
    plain = evaluand.generate([engine_request(Ask(i, p, 8), lm.tokenizer, 256) for i, p in enumerate(prompts)])
    fused = evaluand.generate([engine_request(Ask(i, p, 8, score=a), lm.tokenizer, 256)
                               for i, (p, a) in enumerate(zip(prompts, answers))])
    assert [r.tokens for r in fused] == [r.tokens for r in plain]  # scoring from the prefill changes no token
    assert all(r.continuation_nll is None for r in plain)
    reference = lm.loglikelihood([Instance("loglikelihood", {}, (p, a), i)
                                  for i, (p, a) in enumerate(zip(prompts, answers))])
    for result, a, (logprob, _) in zip(fused, answers, reference):
        tokens = len(lm.tokenizer(a, add_special_tokens=False)["input_ids"])
        assert result.continuation_nll == pytest.approx(-logprob / tokens, rel=1e-4, abs=1e-5)
