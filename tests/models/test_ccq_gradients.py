"""Gradients a user can fine-tune with: every form of CCQ's read, as a layer calls it (its gate's weight and bias,
Gated DeltaNet's L2 norms of q and k), passes a float64 gradient check: the dense chunked read, the packed read
(cu_seqlens, an empty and a one-token sequence among them), and the decoding step from carried statistics (the torch
form: the fused kernel takes no gradients, and a call that needs them goes to this form); and the whole CCQ-GLA and
CCQ-GDN layer, through fla's layer on the CPU backend."""

from __future__ import annotations

import pytest
import torch
from torch.func import functional_call

from ccq_eval.models.ccq_read import CCQRead, CCQSettings
from ccq_eval.ops.ccq import CCQState, contract_query

H, D = 2, 3


def inputs(T: int, B: int = 1, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(B, T, H, D, generator=g, dtype=torch.float64)
    k = torch.randn(B, T, H, D, generator=g, dtype=torch.float64) + 0.5
    w = torch.randn(H, D, generator=g, dtype=torch.float64) * 0.5
    b = torch.randn(H, generator=g, dtype=torch.float64) * 0.5
    return [x.requires_grad_(True) for x in (q, k, w, b)]


def read(sigma_scale: str = "none") -> CCQRead:
    return CCQRead(H, D, CCQSettings(ccq_sigma_scale=sigma_scale)).double()


def carried(B: int = 1) -> CCQState:
    g = torch.Generator().manual_seed(7)
    keys = torch.randn(B, 9, H, D, generator=g, dtype=torch.float64) + 0.3
    return contract_query(keys, keys, torch.zeros(B, 9, H, dtype=torch.float64), output_final_state=True)[1]


def through(module, w, b, *args, **kwargs):
    """The read's (q', k as read) with the gate's parameters given."""
    out = functional_call(module, {"gate.weight": w, "gate.bias": b}, args, kwargs)
    return out[0], out[1]


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_dense_read_passes_gradcheck(normalize, sigma_scale):
    q, k, w, b = inputs(T=11)
    module = read(sigma_scale)
    state = carried()
    assert torch.autograd.gradcheck(
        lambda q, k, w, b, mean, cov: through(module, w, b, q, k, CCQState(state.count, mean, cov), False,
                                              normalize=normalize),
        (q, k, w, b, state.mean.requires_grad_(True), state.cov.requires_grad_(True)))


@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_packed_read_passes_gradcheck(normalize, monkeypatch):
    from ccq_eval.ops.ccq import state as shared

    monkeypatch.setattr(shared, "BLOCK_TOKENS", 8)  # blocks of slots carried across
    lengths = [5, 0, 1, 7]
    q, k, w, b = inputs(T=sum(lengths))
    cu = torch.tensor([0, 5, 5, 6, 13])
    module = read()
    assert torch.autograd.gradcheck(lambda q, k, w, b: through(module, w, b, q, k, None, False, cu_seqlens=cu,
                                                               normalize=normalize), (q, k, w, b))


@pytest.mark.parametrize("sigma_scale", ["none", "trace"])
@pytest.mark.parametrize("normalize", [False, True], ids=["gla", "gated-deltanet"])
def test_the_decoding_step_passes_gradcheck(normalize, sigma_scale):
    q, k, w, b = inputs(T=1, B=2)
    module = read(sigma_scale)
    state = carried(B=2)

    def step(q, k, w, b, mean, cov):
        q_clean, k_read = through(module, w, b, q, k, CCQState(state.count, mean, cov.clone()), True,
                                  normalize=normalize)
        return q_clean, k_read

    assert torch.autograd.gradcheck(step, (q, k, w, b, state.mean.requires_grad_(True),
                                           state.cov.requires_grad_(True)))


def test_a_step_that_needs_gradients_leaves_the_carried_sigma_alone():
    q, k, w, b = inputs(T=1, B=2)
    state = carried(B=2)
    before = state.cov.clone()
    q_clean, _ = through(read(), w, b, q, k, state, True)
    q_clean.sum().backward()
    assert torch.equal(state.cov, before) and w.grad is not None and w.grad.abs().sum() > 0


@pytest.mark.parametrize("family", ["gla", "gated_deltanet"])
def test_the_whole_ccq_layer_passes_gradcheck(family):
    """The CCQ layer as a model trains it (fla's layer forward, CCQ's read hooked in), float64, on a few tokens: the
    input's gradient and the gate's."""
    from ccq_eval.models.ccq_read import attach_ccq
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    torch.manual_seed(0)
    if family == "gla":
        from fla.layers.gla import GatedLinearAttention

        from ccq_eval.models.ccq_models.gla import CCQGatedLinearAttention as ccq_class

        base = GatedLinearAttention(hidden_size=16, num_heads=2, layer_idx=0)
    else:
        from fla.layers.gated_deltanet import GatedDeltaNet

        from ccq_eval.models.ccq_models.gated_deltanet import CCQGatedDeltaNet as ccq_class

        base = GatedDeltaNet(hidden_size=16, num_heads=2, head_dim=8, layer_idx=0, expand_v=1)
    layer = attach_ccq(base, ccq_class, base.num_heads, base.head_k_dim, CCQSettings()).double()
    with torch.no_grad():
        layer.ccq.gate.weight.normal_(0, 0.3)  # away from the zero start, so the gate's own path is exercised
    x = torch.randn(1, 6, 16, dtype=torch.float64, requires_grad=True)
    w, b = (p.detach().clone().requires_grad_(True) for p in (layer.ccq.gate.weight, layer.ccq.gate.bias))
    assert torch.autograd.gradcheck(
        lambda x, w, b: functional_call(layer, {"ccq.gate.weight": w, "ccq.gate.bias": b}, (x,))[0], (x, w, b),
        atol=1e-6, rtol=1e-4)


@pytest.mark.parametrize("family", ["gla", "gated_deltanet"])
def test_at_lambda_zero_a_ccq_model_trains_exactly_as_its_backbone(family):
    """The zoo's training path (zoo_build.build_model, the same seed, a lookup batch): a CCQ model whose lam is 0
    starts from its backbone's weights and gives its backbone's loss and every backbone parameter's gradient, so
    whatever a CCQ model learns otherwise comes from its read, not from the way it is built or hooked (for Gated
    DeltaNet: the L2 norms CCQ takes over from fla's kernel)."""
    import random

    from ccq_eval import zoo_build as zb
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    models = {name: zb.build_model(zb.ZooModel("t", name, 0)).train() for name in (family, f"ccq_{family}")}
    backbone, ccq = models[family], models[f"ccq_{family}"]
    for layer in ccq.model.layers:
        layer.attn.ccq.fixed_lambda, layer.attn.ccq.gate = 0.0, None  # lam = 0 exactly, no gate
    shared, own = backbone.state_dict(), ccq.state_dict()
    assert set(shared) <= set(own) and all(torch.equal(value, own[name]) for name, value in shared.items())
    batches = zb.Batches(zb.TrainConfig())
    rng = random.Random(0)
    docs = [batches.lookup_doc(rng)[0] for _ in range(3)]
    width = min(len(d) for d in docs)
    ids = torch.tensor([d[:width] for d in docs])
    losses = {}
    for name, model in models.items():
        logits = model(input_ids=ids[:, :-1]).logits
        losses[name] = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), ids[:, 1:].flatten())
        losses[name].backward()
    assert torch.allclose(losses[family], losses[f"ccq_{family}"], rtol=1e-5, atol=1e-6)
    grads = dict(ccq.named_parameters())
    for name, parameter in backbone.named_parameters():
        torch.testing.assert_close(grads[name].grad, parameter.grad, rtol=1e-4, atol=1e-6, msg=name)
