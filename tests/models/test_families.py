"""Every family of the paper's tables beyond GLA / GDN (DeltaNet, RetNet, HGRN2, Mamba, Mamba2, Samba,
a GDN hybrid) and transformers' own Llama / GPT-NeoX, on the CPU backend: cached decoding equals the
full forward, a left-padded batch equals its single sequences, long perplexity in chunks equals one
forward; and training-free CCQ on DeltaNet / RetNet / HGRN2 (lambda 0 is the backbone bit for bit,
the read receives the contracted query)."""

import pytest
import torch
import torch.nn.functional as F
from fla.layers import delta_net as fla_delta_net_layer
from fla.layers import gated_deltanet as fla_gdn_layer
from fla.layers import gla as fla_gla_layer
from fla.layers import hgrn2 as fla_hgrn2_layer
from fla.layers import multiscale_retention as fla_retention_layer

from ccq_eval.models import naive_contract_query
from ccq_eval.ops.ccq import CCQState
from ccq_eval.suites.longppl.perplexity import sequence_nll
from tests.helpers import HOOKED_CCQ, NEW_FAMILIES, left_padding_gaps, tiny_model

CCQ_HOOKED = [f"ccq_{k}" for k in HOOKED_CCQ]


def _tokens(B, T, seed=0):
    return torch.randint(0, 256, (B, T), generator=torch.Generator().manual_seed(seed))


def _model(kind):
    torch.manual_seed(0)
    return tiny_model(kind, **({"ccq_gate_bias_init": 0.0} if kind.startswith("ccq_") else {}))


@pytest.mark.parametrize("kind", NEW_FAMILIES + CCQ_HOOKED)
def test_cached_decoding_equals_full_forward(kind):
    model = _model(kind)
    x = _tokens(2, 110)
    with torch.no_grad():
        full = model(x).logits
        out = model(x[:, :70], use_cache=True)
        cache, logits = out.past_key_values, [out.logits]
        for t in range(70, 110):  # crosses the 64-token mode switch and the 48-token attention window
            out = model(x[:, t : t + 1], past_key_values=cache, use_cache=True)
            cache = out.past_key_values
            logits.append(out.logits)
    assert (torch.cat(logits, 1) - full).abs().max() <= 1e-4


@pytest.mark.parametrize("kind", NEW_FAMILIES + CCQ_HOOKED)
def test_left_padded_batch_equals_single_forwards(kind):
    gaps = left_padding_gaps(_model(kind), _tokens(3, 90, seed=1))
    assert max(gaps) <= 1e-4, (kind, gaps)


@pytest.mark.parametrize("kind", NEW_FAMILIES + CCQ_HOOKED)
def test_perplexity_engine_equals_one_plain_forward(kind):
    """sequence_nll chunks the sequence (cache carried) where the family takes multi-token chunks with a
    cache, and runs one forward where it does not (Mamba's torch path); both must equal one forward."""
    model = _model(kind)
    ids = _tokens(1, 300, seed=2)[0]
    with torch.no_grad():
        logits = model(ids[None, :-1]).logits[0]
    plain = F.cross_entropy(logits.double(), ids[1:], reduction="none")
    torch.testing.assert_close(sequence_nll(model, ids, chunk_size=64), plain, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("kind", HOOKED_CCQ)
@pytest.mark.parametrize("overrides", [{"use_ccq": False}, {"ccq_fixed_lambda": 0.0}])
def test_ccq_at_lambda_zero_is_the_backbone_bit_for_bit(kind, overrides):
    base = _model(kind)
    model = tiny_model(f"ccq_{kind}", **overrides)
    result = model.load_state_dict(base.state_dict(), strict=False)
    assert not result.unexpected_keys and not result.missing_keys
    for T in (40, 150):  # the recurrent and the chunked read
        x = _tokens(2, T)
        with torch.no_grad():
            assert torch.equal(model(x).logits, base(x).logits)


@pytest.mark.parametrize("kind,module,read", [
    ("delta_net", fla_delta_net_layer, "chunk_delta_rule"),
    ("retnet", fla_retention_layer, "chunk_retention"),
    ("hgrn2", fla_hgrn2_layer, "chunk_gla"),
    ("gla", fla_gla_layer, "chunk_gla"),  # the paper's backbones attach through the same hook
    ("gated_deltanet", fla_gdn_layer, "chunk_gated_delta_rule"),
])
def test_the_read_receives_the_contracted_query(kind, module, read, monkeypatch):
    seen = []
    original = getattr(module, read)

    def spy(**kwargs):
        seen.append((kwargs["q"].detach().clone(), kwargs["k"].detach().clone(), kwargs.get("use_qk_l2norm_in_kernel")))
        return original(**kwargs)

    monkeypatch.setattr(module, read, spy)
    plain = tiny_model(f"ccq_{kind}", ccq_fixed_lambda=0.0)
    ccq = tiny_model(f"ccq_{kind}", ccq_fixed_lambda=0.6)
    ccq.load_state_dict(plain.state_dict())
    x = _tokens(1, 100)
    with torch.no_grad():
        plain(x)
        raw_q, raw_k, _ = seen[0]
        seen.clear()
        ccq(x)
    read_q, read_k, in_kernel_norm = seen[0]  # first layer: the same hidden states in both runs
    assert not in_kernel_norm  # DeltaNet's keys are normalised before CCQ sees them, not again in the read
    torch.testing.assert_close(read_k, raw_k)
    expected = naive_contract_query(raw_q, raw_k, torch.full(raw_q.shape[:3], 0.6), "none")
    torch.testing.assert_close(read_q.double(), expected, rtol=1e-5, atol=1e-5)
    assert (read_q - raw_q).abs().max() > 1e-5  # HGRN2's keys (1 - f) are small at initialisation


@pytest.mark.parametrize("kind", CCQ_HOOKED)
def test_ccq_statistics_ride_in_the_cache(kind):
    model = _model(kind)
    x = _tokens(1, 30)
    with torch.no_grad():
        cache = model(x[:, :10], use_cache=True).past_key_values
        for t in range(10, 30):
            cache = model(x[:, t : t + 1], past_key_values=cache, use_cache=True).past_key_values
    _, ccq_state = cache[0]["recurrent_state"]
    assert isinstance(ccq_state, CCQState) and ccq_state.count.tolist() == [30]


@pytest.mark.parametrize("kind", ["mamba", "mamba2"])
def test_fla_mamba_equals_transformers_own_mamba_on_the_same_weights(kind):
    """fla's classes take over transformers' `mamba` / `mamba2` model_types once fla is imported; they keep
    the parameter names, so a hub checkpoint in transformers' format loads, and transformers' own
    implementation (pure torch here) is an independent reference for the numbers."""
    import transformers.models.mamba as hf_mamba
    import transformers.models.mamba2 as hf_mamba2

    ours = _model(kind)
    hf = {"mamba": (hf_mamba.MambaConfig, hf_mamba.MambaForCausalLM),
          "mamba2": (hf_mamba2.Mamba2Config, hf_mamba2.Mamba2ForCausalLM)}[kind]
    fields = {k: v for k, v in ours.config.to_dict().items() if k not in ("model_type", "architectures")}
    reference = hf[1](hf[0](**fields)).eval()
    missing, unexpected = reference.load_state_dict(ours.state_dict(), strict=False)
    assert not missing and not unexpected
    x = _tokens(2, 100, seed=3)
    with torch.no_grad():
        torch.testing.assert_close(ours(x).logits, reference(x).logits, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kind", ["ccq_gla", "ccq_gated_deltanet", *CCQ_HOOKED])
def test_every_ccq_layer_runs_fla_s_own_forward(kind):
    """CCQ attaches by wrapping the read only: no CCQ layer class defines a forward of its own."""
    from ccq_eval.models.ccq_read_hook import HookedCCQLayer

    layer = type(tiny_model(kind).model.layers[0].attn)
    assert layer.forward is HookedCCQLayer.forward and "forward" not in vars(layer)
