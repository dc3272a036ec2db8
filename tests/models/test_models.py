"""The CCQ model families: drop-in over fla's backbones, the read really uses the contracted query,
cached decoding, padding, round trips, and stock fla models running on the CPU backend."""

import pytest
import torch
from fla.layers import gated_deltanet as fla_gdn_layer
from fla.layers import gla as fla_gla_layer
from transformers import AutoModelForCausalLM

from ccq_eval.models.ccq_models.gated_deltanet import CCQGatedDeltaNetConfig
from ccq_eval.models.ccq_models.gla import CCQGLAConfig
from ccq_eval.models import naive_contract_query
from ccq_eval.ops.ccq import CCQState
from tests.helpers import greedy_by_full_forward, left_padding_gaps, tiny_model

FAMILIES = [("gla", "ccq_gla"), ("gated_deltanet", "ccq_gated_deltanet")]
CCQ_KINDS = ["ccq_gla", "ccq_gated_deltanet"]


def _tokens(B=2, T=150):
    return torch.randint(0, 256, (B, T))


@pytest.mark.parametrize("backbone,ccq", FAMILIES)
@pytest.mark.parametrize("overrides", [{"use_ccq": False}, {"ccq_fixed_lambda": 0.0}])
def test_without_ccq_the_model_is_exactly_its_backbone(backbone, ccq, overrides):
    base = tiny_model(backbone)
    model = tiny_model(ccq, **overrides)
    result = model.load_state_dict(base.state_dict(), strict=False)
    assert not result.unexpected_keys and not result.missing_keys
    x = _tokens()
    with torch.no_grad():
        assert torch.equal(model(x).logits, base(x).logits)


@pytest.mark.parametrize("backbone,ccq", FAMILIES)
def test_ccq_changes_the_logits_and_adds_only_the_gate(backbone, ccq):
    base = tiny_model(backbone)
    model = tiny_model(ccq, ccq_gate_bias_init=0.0)
    result = model.load_state_dict(base.state_dict(), strict=False)
    assert sorted(result.missing_keys) == sorted(
        f"model.layers.{i}.attn.ccq.gate.{p}" for i in range(2) for p in ("weight", "bias"))
    x = _tokens()
    with torch.no_grad():
        assert (model(x).logits - base(x).logits).abs().max() > 1e-4


@pytest.mark.parametrize("kind,read_name,module", [
    ("ccq_gla", "chunk_gla", fla_gla_layer),
    ("ccq_gated_deltanet", "chunk_gated_delta_rule", fla_gdn_layer),
])
@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
def test_the_read_receives_the_contracted_query(kind, read_name, module, sigma_scale, monkeypatch):
    """Spy on the backbone's read: with lam = 0.7 its q must be naive_contract_query(q_raw, k)."""
    seen = []
    original = getattr(module, read_name)

    def spy(*args, **kwargs):
        seen.append((kwargs["q"].detach().clone(), kwargs["k"].detach().clone()))
        return original(*args, **kwargs)

    monkeypatch.setattr(module, read_name, spy)
    x = _tokens(1, 100)
    plain = tiny_model(kind, ccq_fixed_lambda=0.0, ccq_sigma_scale=sigma_scale)
    ccq = tiny_model(kind, ccq_fixed_lambda=0.7, ccq_sigma_scale=sigma_scale)
    ccq.load_state_dict(plain.state_dict())
    with torch.no_grad():
        plain(x)
        raw_q, raw_k = seen[0]
        seen.clear()
        ccq(x)
    read_q, read_k = seen[0]  # first layer: same input hidden states in both runs
    torch.testing.assert_close(read_k, raw_k)
    expected = naive_contract_query(raw_q, raw_k, torch.full(raw_q.shape[:3], 0.7), sigma_scale)
    torch.testing.assert_close(read_q.double(), expected, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", CCQ_KINDS + ["gla", "gated_deltanet", "transformer"])
def test_cached_decoding_equals_full_forward(kind):
    model = tiny_model(kind, **({"ccq_gate_bias_init": 0.0} if kind.startswith("ccq") else {}))
    x = _tokens(2, 150)
    with torch.no_grad():
        full = model(x).logits
        out = model(x[:, :70], use_cache=True)
        cache, logits = out.past_key_values, [out.logits]
        for t in range(70, 150):  # crosses the 64- and 128-token chunk boundaries
            out = model(x[:, t : t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            logits.append(out.logits)
    assert (torch.cat(logits, 1) - full).abs().max() <= 1e-5


@pytest.mark.parametrize("kind", CCQ_KINDS)
def test_ccq_statistics_live_in_the_cache_and_do_not_grow(kind):
    model = tiny_model(kind)
    x = _tokens(1, 40)
    with torch.no_grad():
        out = model(x[:, :8], use_cache=True)
        cache = out.past_key_values
        sizes = []
        for t in range(8, 40):
            cache = model(x[:, t : t + 1], past_key_values=cache, use_cache=True).past_key_values
            _, ccq_state = cache[0]["recurrent_state"]
            assert isinstance(ccq_state, CCQState)
            sizes.append(sum(v.numel() for v in (ccq_state.count, ccq_state.mean, ccq_state.cov)))
    assert ccq_state.count.tolist() == [40]
    assert len(set(sizes)) == 1


@pytest.mark.parametrize("kind", CCQ_KINDS + ["transformer"])
def test_left_padded_batch_equals_single_forwards(kind):
    model = tiny_model(kind, **({"ccq_gate_bias_init": 0.0} if kind.startswith("ccq") else {}))
    assert max(left_padding_gaps(model, _tokens(3, 90))) <= 1e-5


@pytest.mark.parametrize("kind", CCQ_KINDS + ["gla", "gated_deltanet", "transformer"])
def test_generate_with_cache_matches_full_forwards(kind):
    """generate() decodes with the cache; its per-step logits must be the full forward's on the same
    tokens (comparing logits, not argmax paths, which near-ties in a random model can flip)."""
    model = tiny_model(kind)
    model.generation_config.eos_token_id = None  # decode all 12 steps; no early stop and padding
    prompt = _tokens(2, 30)
    with torch.no_grad():
        out = model.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12, do_sample=False,
                             pad_token_id=0, return_dict_in_generate=True, output_logits=True)
        step_logits = torch.stack(out.logits, 1)  # [B, 12, V]
        full = model(out.sequences).logits[:, 29:-1]
    assert (step_logits - full).abs().max() <= 1e-5
    assert torch.equal(out.sequences[:, 30:], step_logits.argmax(-1))
    assert torch.equal(greedy_by_full_forward(model, prompt, 1)[:, 30], out.sequences[:, 30])


@pytest.mark.parametrize("kind", CCQ_KINDS + ["gla", "gated_deltanet", "transformer"])
def test_training_step_has_finite_gradients_everywhere(kind):
    model = tiny_model(kind).train()
    x = _tokens(2, 80)
    loss = model(x, labels=x).loss
    loss.backward()
    assert torch.isfinite(loss) and 4.0 < loss.item() < 7.0  # ~ log(260) at random init
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None and torch.isfinite(g).all() for g in grads.values())
    if kind.startswith("ccq"):
        assert grads["model.layers.0.attn.ccq.gate.bias"].abs().sum() > 0


@pytest.mark.parametrize("kind", CCQ_KINDS)
def test_save_pretrained_round_trip(kind, tmp_path):
    model = tiny_model(kind, ccq_gate_bias_init=0.5, ccq_sigma_scale="trace")
    model.save_pretrained(tmp_path)
    loaded = AutoModelForCausalLM.from_pretrained(tmp_path).eval()
    assert type(loaded) is type(model)
    assert loaded.config.ccq_sigma_scale == "trace" and loaded.config.model_type == kind
    x = _tokens(1, 50)
    with torch.no_grad():
        assert torch.equal(loaded(x).logits, model(x).logits)


@pytest.mark.parametrize("config_class", [CCQGLAConfig, CCQGatedDeltaNetConfig])
def test_config_validation(config_class):
    assert config_class().ccq_weighting == "uniform" and config_class().use_ccq is True
    assert config_class().ccq_sigma_scale == "none" and config_class().ccq_fixed_lambda is None
    with pytest.raises(ValueError, match="ccq_weighting='decay' is not implemented"):
        config_class(ccq_weighting="decay")
    with pytest.raises(ValueError, match="ccq_sigma_scale"):
        config_class(ccq_sigma_scale="frobenius")
    with pytest.raises(ValueError, match="finite"):
        config_class(ccq_fixed_lambda=float("nan"))
