"""The CPU backend's ops for DeltaNet, RetNet, HGRN2 and Mamba2 against fla's own references
(fla/ops/*/naive.py, fla.modules.norm.layernorm_gated.rms_norm_ref): per-position recurrences, with
initial and final states, packed sequences and the state layouts the layers use."""

import pytest
import torch
import torch.nn.functional as F
from fla.modules.norm.layernorm_gated import rms_norm_ref
from fla.ops.delta_rule.naive import delta_rule_recurrence
from fla.ops.gla.naive import naive_recurrent_gla
from fla.ops.retention.naive import naive_retention
from fla.ops.simple_gla.naive import naive_recurrent_simple_gla

from ccq_eval.ops import cpu_forms
from ccq_eval.ops.delta_net import cpu as delta_ops
from ccq_eval.ops.hgrn2 import cpu as hgrn2_ops
from ccq_eval.ops.mamba2 import cpu as mamba2_ops
from ccq_eval.ops.retnet import cpu as retnet_ops

TOL = dict(rtol=1e-4, atol=1e-4)


def _qkv(B=2, T=83, H=2, K=16, V=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    q, k = (torch.randn(B, T, H, K, generator=g) for _ in range(2))
    v = torch.randn(B, T, H, V, generator=g)
    return q, k, v, g


def _head_first(*xs):
    return [x.transpose(1, 2) for x in xs]


@pytest.mark.parametrize("T", [1, 63, 64, 150])
@pytest.mark.parametrize("read", ["chunk", "fused_recurrent"])
def test_delta_rule_against_fla_recurrence(T, read):
    q, k, v, g = _qkv(T=T)
    k = F.normalize(k, dim=-1)  # the delta rule is stable for unit keys, as DeltaNet writes them
    beta = torch.rand(2, T, 2, generator=g)
    h0 = torch.randn(2, 2, 16, 12, generator=g)
    fn = delta_ops.chunk_delta_rule if read == "chunk" else delta_ops.fused_recurrent_delta_rule
    o, S = fn(q, k, v, beta, initial_state=h0, output_final_state=True)
    ref_o, ref_S = delta_rule_recurrence(*_head_first(q, k, v, beta), initial_state=h0)
    torch.testing.assert_close(o, ref_o.transpose(1, 2), **TOL)
    torch.testing.assert_close(S, ref_S, **TOL)


def test_delta_rule_l2_norm_in_kernel_and_packed_sequences():
    q, k, v, g = _qkv(B=1, T=120)
    beta = torch.rand(1, 120, 2, generator=g)
    cu = torch.tensor([0, 50, 120])
    o, S = delta_ops.chunk_delta_rule(q, k, v, beta, output_final_state=True, cu_seqlens=cu, use_qk_l2norm_in_kernel=True)
    qn, kn = F.normalize(q, dim=-1, eps=1e-6), F.normalize(k, dim=-1, eps=1e-6)
    for i, (s, e) in enumerate(((0, 50), (50, 120))):
        ref_o, ref_S = delta_rule_recurrence(*_head_first(qn[:, s:e], kn[:, s:e], v[:, s:e], beta[:, s:e]))
        torch.testing.assert_close(o[:, s:e], ref_o.transpose(1, 2), **TOL)
        torch.testing.assert_close(S[i : i + 1], ref_S, **TOL)


def test_delta_rule_rejects_a_per_channel_beta():
    q, k, v, _ = _qkv(T=8)
    with pytest.raises(NotImplementedError, match="per-channel beta"):
        delta_ops.chunk_delta_rule(q, k, v, torch.rand(2, 8, 2, 12))


def test_retention_decays_are_fla_s():
    assert torch.allclose(retnet_ops.retention_log_decay(3).exp(), torch.tensor([1 - 2 ** -5, 1 - 2 ** -6, 1 - 2 ** -7]))


@pytest.mark.parametrize("T", [1, 40, 130])
@pytest.mark.parametrize("fn", [retnet_ops.chunk_retention, retnet_ops.fused_chunk_retention, retnet_ops.fused_recurrent_retention])
def test_retention_against_fla_recurrence_with_states(T, fn):
    q, k, v, g = _qkv(T=T, H=3)
    h0 = torch.randn(2, 3, 16, 12, generator=g)
    o, S = fn(q, k, v, initial_state=h0, output_final_state=True)
    gate = retnet_ops.retention_log_decay(3)[None, None].expand(2, T, 3)
    ref_o, ref_S = naive_recurrent_simple_gla(q, k, v, gate, initial_state=h0)
    torch.testing.assert_close(o, ref_o, **TOL)
    torch.testing.assert_close(S, ref_S, **TOL)


def test_parallel_retention_and_the_state_v_first_layout():
    q, k, v, g = _qkv(T=90, H=2)
    o, attn = retnet_ops.parallel_retention(q, k, v)
    assert attn is None
    torch.testing.assert_close(o, naive_retention(*_head_first(q, k, v)).transpose(1, 2), **TOL)
    _, S_k_first = retnet_ops.fused_recurrent_retention(q, k, v, output_final_state=True)
    _, S_v_first = retnet_ops.fused_recurrent_retention(q, k, v, output_final_state=True, state_v_first=True)
    torch.testing.assert_close(S_v_first, S_k_first.transpose(-1, -2))


def test_hgrn2_read_is_gla_with_a_v_first_state():
    """HGRN2 calls fla's GLA ops with k = 1 - exp(g) and state_v_first=True; the backend's names in
    fla.layers.hgrn2 route there."""
    import fla.layers.hgrn2 as hgrn2

    cpu_forms.install_cpu_backend()
    q, _, v, gen = _qkv(T=70)
    g = F.logsigmoid(torch.randn(2, 70, 2, 16, generator=gen))
    k = 1 - g.exp()
    h0 = torch.randn(2, 2, 12, 16, generator=gen)  # V-first
    for read in (hgrn2.chunk_gla, hgrn2.fused_recurrent_gla):
        kwargs = dict(g=g) if read is hgrn2.chunk_gla else dict(gk=g)
        o, S = read(q=q, k=k, v=v, initial_state=h0, output_final_state=True, state_v_first=True, **kwargs)
        ref_o, ref_S = naive_recurrent_gla(q, k, v, g, initial_state=h0.transpose(-1, -2), output_final_state=True)
        torch.testing.assert_close(o, ref_o, **TOL)
        torch.testing.assert_close(S, ref_S.transpose(-1, -2), **TOL)


def test_rms_norm_linear_is_norm_then_projection():
    g = torch.Generator().manual_seed(1)
    x, w, lw, lb = (torch.randn(*s, generator=g) for s in ((3, 5, 24), (24,), (10, 24), (10,)))
    out = hgrn2_ops.rms_norm_linear(x, w, None, lw, lb, eps=1e-5)
    torch.testing.assert_close(out, F.linear(rms_norm_ref(x, w, None, eps=1e-5), lw, lb), **TOL)


@pytest.mark.parametrize("group_size", [None, 8])
@pytest.mark.parametrize("norm_before_gate", [True, False])
@pytest.mark.parametrize("gated", [True, False])
def test_mamba2_gated_group_norm_against_fla_reference(group_size, norm_before_gate, gated):
    g = torch.Generator().manual_seed(2)
    x, z = torch.randn(2, 7, 32, generator=g), torch.randn(2, 7, 32, generator=g)
    w = torch.randn(32, generator=g)
    z = z if gated else None
    out = mamba2_ops.rmsnorm_fn(x, w, None, z=z, eps=1e-5, group_size=group_size, norm_before_gate=norm_before_gate)
    ref = rms_norm_ref(x, w, None, z=z, eps=1e-5, group_size=group_size, norm_before_gate=norm_before_gate)
    torch.testing.assert_close(out, ref, **TOL)
