"""The engine against its slow reference (generation/reference.py: batch 1, a full forward per token, no cache) on
every family the harness loads: the same tokens and the same continuation NLLs at batch 3 over five requests (rows
leaving and, where the layout allows it, joining a running batch), with every stop rule; which layout each family
gets; a tie named where float32 batches part."""

from __future__ import annotations

import pytest
import torch

from ccq_eval.generation import layouts
from ccq_eval.generation.agreement import first_difference, partings
from ccq_eval.generation.engine import generate
from ccq_eval.generation.reference import generate_one
from ccq_eval.generation.request import Request
from tests.helpers import byte_tokenizer, tiny_model

TOKENIZER = byte_tokenizer()
LAYOUT = {"gla": "packed", "ccq_gla": "packed", "gated_deltanet": "packed", "ccq_gated_deltanet": "packed",
          "delta_net": "packed", "ccq_delta_net": "packed", "hgrn2": "packed", "ccq_hgrn2": "packed",
          "mamba": "separate", "mamba2": "separate", "retnet": "padded", "ccq_retnet": "padded", "samba": "padded",
          "gdn_hybrid": "padded", "transformer": "padded", "llama": "padded", "gpt_neox": "padded"}


def requests(seed: int = 1) -> list[Request]:
    """Five prompts of different lengths and budgets, some scoring a continuation, longest first."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(50, 12, 1), (30, 9, 3), (21, 1, 0), (12, 4, 0), (7, 6, 5)]
    return [Request(tuple(torch.randint(0, 256, (n,), generator=g).tolist()), max_new_tokens=budget,
                    score=tuple(range(65, 65 + scored))) for n, budget, scored in shapes]


def with_stops(request: Request, reference_tokens: list[int], rule: str) -> Request:
    """The request with a stop rule that fires inside the reference's own output."""
    from dataclasses import replace

    if rule == "stop_ids":
        return replace(request, stop_ids=frozenset({reference_tokens[2]}), min_new_tokens=1)
    text = TOKENIZER.decode(reference_tokens[1:3])
    if rule == "until":
        return replace(request, until=(text,))
    return replace(request, stop_when=lambda out: text in out)


@pytest.fixture(autouse=True)
def count_joins(monkeypatch):
    joins = []
    original = layouts.Independent.join
    monkeypatch.setattr(layouts.Independent, "join", lambda self, *a: (joins.append(1), original(self, *a))[1])
    return joins


@pytest.mark.parametrize("kind", list(LAYOUT))
def test_batch_three_equals_the_reference_on_every_family(kind, count_joins):
    torch.manual_seed(0)
    model = tiny_model(kind).double()
    assert layouts.layout_name(model) == LAYOUT[kind]
    asked = requests()
    got = generate(model, TOKENIZER, asked, batch_size=3)
    for request, result in zip(asked, got):
        reference, _ = generate_one(model, TOKENIZER, request)
        assert result.tokens == reference.tokens and len(result.tokens) == request.max_new_tokens
        if request.score:
            assert result.continuation_nll == pytest.approx(reference.continuation_nll, rel=1e-7)
        else:
            assert result.continuation_nll is None
    # rows finished early (budget 1 and 4) left, and the queue's next prompts joined the running batch
    assert (len(count_joins) > 0) == (LAYOUT[kind] != "padded")


@pytest.mark.parametrize("kind", ["gla", "mamba", "transformer"])  # one family of each layout
@pytest.mark.parametrize("rule", ["stop_ids", "until", "stop_when"])
def test_each_stop_rule_ends_a_row_where_the_reference_ends_it(kind, rule):
    torch.manual_seed(0)
    model = tiny_model(kind).double()
    plain = [r for r in requests() if r.max_new_tokens >= 6]
    stopped = [with_stops(r, generate_one(model, TOKENIZER, r)[0].tokens, rule) for r in plain]
    got = generate(model, TOKENIZER, stopped, batch_size=2)
    for request, result in zip(stopped, got):
        assert result.tokens == generate_one(model, TOKENIZER, request)[0].tokens
        assert len(result.tokens) < request.max_new_tokens  # the rule fired, not the budget


def test_a_parting_is_named_and_judged_by_the_reference_s_margin():
    torch.manual_seed(0)
    model = tiny_model("gla")
    asked = requests()
    got = generate(model, TOKENIZER, asked, batch_size=3)
    assert partings(model, TOKENIZER, asked, got) == [p for p in partings(model, TOKENIZER, asked, got) if p.tie]
    forged = [type(r)(tokens=list(r.tokens), continuation_nll=r.continuation_nll) for r in got]
    forged[0].tokens[3] = (forged[0].tokens[3] + 1) % 256  # a token the reference would not pick: a fault
    named = [p for p in partings(model, TOKENIZER, asked, forged) if p.index == 0]
    assert len(named) == 1 and named[0].position == 3 and not named[0].tie
    assert first_difference([1, 2, 3], [1, 2]) == 2 and first_difference([1, 2], [1, 2]) is None


INDEPENDENT = [kind for kind, layout in LAYOUT.items() if layout != "padded"]


def assert_fixed_slots_equal_the_reference(kind: str) -> None:
    """Five requests through three fixed slots give the batch-1 reference's tokens and continuation NLLs."""
    torch.manual_seed(0)
    model = tiny_model(kind).double()
    asked = requests()
    got = generate(model, TOKENIZER, asked, batch_size=3, static=True)
    for request, result in zip(asked, got):
        reference, _ = generate_one(model, TOKENIZER, request)
        assert result.tokens == reference.tokens
        if request.score:
            assert result.continuation_nll == pytest.approx(reference.continuation_nll, rel=1e-7)


@pytest.mark.parametrize("kind", INDEPENDENT)
def test_fixed_slots_equal_the_reference(kind):
    """The static batch a CUDA graph replays (slots refilled in place, the cache in fixed buffers), stepped eagerly."""
    assert_fixed_slots_equal_the_reference(kind)


@pytest.mark.parametrize("rule", ["stop_ids", "until", "stop_when"])
def test_fixed_slots_keep_every_stop_rule(rule):
    torch.manual_seed(0)
    model = tiny_model("ccq_gla").double()
    stopped = [with_stops(r, generate_one(model, TOKENIZER, r)[0].tokens, rule) for r in requests()
               if r.max_new_tokens >= 6]
    got = generate(model, TOKENIZER, stopped, batch_size=2, static=True)
    for request, result in zip(stopped, got):
        assert result.tokens == generate_one(model, TOKENIZER, request)[0].tokens


def test_the_static_width_is_no_wider_than_the_requests(monkeypatch):
    """Two requests at batch size 8 step two slots, not eight idle ones beside them."""
    from ccq_eval.generation.static_rows import StaticRows

    widths = []
    original = StaticRows.__init__
    monkeypatch.setattr(StaticRows, "__init__",
                        lambda rows, model, cache, n, width, capture: (widths.append(width),
                                                                        original(rows, model, cache, n, width, capture))[1])
    torch.manual_seed(0)
    model = tiny_model("gla").double()
    asked = requests()[:2]
    got = generate(model, TOKENIZER, asked, batch_size=8, static=True)
    assert widths == [2]
    assert [r.tokens for r in got] == [generate_one(model, TOKENIZER, r)[0].tokens for r in asked]
