"""lm/wrapper.py's CCQEvalLM on its own (no suite): it implements the adapter interface, holds the budget and the
decoding hooks for one block only, refuses to truncate, ends generation at ``eos_strings``, and scores the answers'
NLL from the decoding prefill equal to lm-eval's loglikelihood, their reference."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from ccq_eval.lm.adapter import ModelAdapter
from ccq_eval.lm.decoding import DecodingHooks
from ccq_eval.lm.wrapper import CCQEvalLM, PromptTooLong, stop_tokens
from ccq_eval.models import load_model


@pytest.fixture(scope="module")
def lm():
    model, tokenizer, _ = load_model("zoo:gla-tiny", device="cpu")
    return CCQEvalLM(model, tokenizer, max_length=256, batch_size=2)


def generate(lm, prompts, tokens=8):
    gen = {"do_sample": False, "temperature": 0.0, "max_gen_toks": tokens, "until": []}
    return lm.generate_until([Instance("generate_until", {}, (p, dict(gen)), i) for i, p in enumerate(prompts)])


def test_the_real_adapter_implements_the_interface(lm):
    assert isinstance(lm, ModelAdapter) and lm.scores_text and (lm.rank, lm.world_size) == (0, 1)
    assert lm.prompt_key("abc") == tuple(lm.tok_batch_encode(["abc"])[0][0].tolist())


def test_budget_and_hooks_hold_for_their_block_only(lm):
    with pytest.raises(RuntimeError):
        with lm.budget(64):
            assert lm.max_length == 64
            raise RuntimeError
    assert lm.max_length == 256
    hooks = DecodingHooks()
    with lm.decoding(hooks):
        assert lm._hooks is hooks
    assert lm._hooks is None


def test_a_prompt_past_the_budget_is_refused_not_cut(lm):
    with lm.budget(64), pytest.raises(PromptTooLong, match="would be truncated"):
        generate(lm, ["x" * 200])
    with lm.budget(64), pytest.raises(PromptTooLong, match="exceeds max_length 64"):
        lm.loglikelihood([Instance("loglikelihood", {}, ("y" * 60, " z" * 10), 0)])


def test_eos_strings_end_generation_at_their_last_token(lm):
    newline = lm.tokenizer.encode("\n", add_special_tokens=False)[-1]
    ids, least = stop_tokens(lm.model, lm.tokenizer, ["\n"])
    assert newline in ids and lm.tokenizer.eos_token_id in ids and least == 1
    assert stop_tokens(lm.model, lm.tokenizer, []) == (ids - {newline}, 0)


def test_continuation_nlls_from_the_prefill_equal_loglikelihood(lm):
    prompts = ["The special magic number for quiet-river is 4417. The number is", "Some other words, then"]
    answers = [" 4417.", " words."]
    hooks = DecodingHooks(score_continuations={
        lm.prompt_key(p): lm.tokenizer(a, add_special_tokens=False)["input_ids"] for p, a in zip(prompts, answers)})
    with lm.decoding(hooks):
        fused = generate(lm, prompts)
    assert fused == generate(lm, prompts)  # scoring from the prefill changes no generated token
    reference = lm.loglikelihood([Instance("loglikelihood", {}, (p, a), i)
                                  for i, (p, a) in enumerate(zip(prompts, answers))])
    for p, a, (logprob, _) in zip(prompts, answers, reference):
        tokens = len(lm.tokenizer(a, add_special_tokens=False)["input_ids"])
        assert hooks.continuation_nlls[lm.prompt_key(p)] == pytest.approx(-logprob / tokens, rel=1e-4, abs=1e-5)
