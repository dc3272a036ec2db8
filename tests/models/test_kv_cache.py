"""The growing KV cache (models/kv_cache.py) against fla's own torch.cat appends, and the full forward."""

import copy

import torch

import fla.models.cache_utils as cache_utils
from ccq_eval.models import kv_cache
from tests.helpers import tiny_model


def greedy(model, ids, steps):
    """Greedy decoding with the cache: (tokens, the logits of every step)."""
    with torch.no_grad():
        out = model(ids, use_cache=True)
        cache, tokens, logits = out.past_key_values, [], [out.logits[:, -1]]
        for _ in range(steps):
            token = logits[-1].argmax(-1, keepdim=True)
            tokens.append(token)
            out = model(token, past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            logits.append(out.logits[:, -1])
    return torch.cat(tokens, 1), torch.stack(logits, 1), cache


def test_growing_cache_decodes_bit_for_bit_as_fla_and_as_the_full_forward(monkeypatch):
    torch.manual_seed(0)
    model = tiny_model("transformer")
    ids = torch.randint(0, 256, (2, 40))
    kv_cache.install_growing_kv_cache()
    grown_tokens, grown_logits, cache = greedy(model, ids, 300)  # past MIN_HEADROOM: the buffer grows twice
    assert hasattr(cache[0]["attn_state"][0], "_ccq_buffer")
    monkeypatch.setattr(cache_utils, "update_attention_cache", kv_cache._ORIGINAL)
    fla_tokens, fla_logits, _ = greedy(model, ids, 300)
    assert torch.equal(grown_tokens, fla_tokens) and torch.equal(grown_logits, fla_logits)
    with torch.no_grad():
        full = model(torch.cat([ids, grown_tokens], 1)).logits[:, 39:]
    assert (full - grown_logits).abs().max() < 1e-4


def test_two_continuations_of_one_cache_do_not_overwrite_each_other():
    kv_cache.install_growing_kv_cache()
    base = kv_cache._append(torch.zeros(1, 3, 2), torch.ones(1, 1, 2))  # [0, 0, 0, 1]
    first = kv_cache._append(base, torch.full((1, 1, 2), 2.0))
    second = kv_cache._append(base, torch.full((1, 1, 2), 3.0))  # base no longer ends at the frontier: a copy
    assert first[0, :, 0].tolist() == [0, 0, 0, 1, 2] and second[0, :, 0].tolist() == [0, 0, 0, 1, 3]
    assert first.data_ptr() == base.data_ptr() != second.data_ptr()
    reordered = copy.copy(first).index_select(0, torch.tensor([0]))  # beam reorder: a fresh tensor, copied next
    assert kv_cache._append(reordered, torch.zeros(1, 1, 2)).data_ptr() != first.data_ptr()


def test_appends_copy_only_when_the_buffer_grows():
    cached = torch.zeros(1, 1000, 4)
    grown = kv_cache._append(cached, torch.ones(1, 1, 4))
    pointers = {grown.data_ptr()}
    for _ in range(200):  # within the 25% headroom: every step in place
        grown = kv_cache._append(grown, torch.ones(1, 1, 4))
        pointers.add(grown.data_ptr())
    assert len(pointers) == 1 and grown.shape[1] == 1201 and grown[0, 1000:].eq(1).all()
