"""Each CPU replacement against a reference written here: per-position recurrences and direct formulas
that share no code with ccq_eval.ops.shared_cpu_forms."""

import inspect
import math

import pytest
import torch
import torch.nn.functional as F

from ccq_eval.ops.gated_deltanet import cpu as gdn_ops
from ccq_eval.ops.gla import cpu as gla_ops
from ccq_eval.ops.transformer import cpu as attn_ops
from ccq_eval.ops import shared_cpu_forms as cpu_ops
from ccq_eval.ops.cpu_forms import _dispatcher, _resolve, patches

f64 = torch.float64


def test_every_patch_target_exists_and_every_replacement_imports():
    missing = []
    for target in patches():
        try:
            _resolve(target)
        except RuntimeError:
            missing.append(target.qualname)
        assert callable(target.resolved()), target.replacement
    assert not missing, f"fla moved these symbols the CPU backend replaces: {missing}"
    assert len(patches()) == 32 and len({p.qualname for p in patches()}) == 32  # the shared ones and each family's


def test_installed_dispatchers_take_the_cpu_path_only_for_cpu_tensors():
    calls = []
    wrapped = _dispatcher(lambda x: calls.append("fla") or x, lambda x: calls.append("cpu") or x, "demo.fn")
    wrapped(torch.zeros(1))
    wrapped(torch.zeros(1, device="meta"))
    assert calls == ["cpu", "fla"]
    import fla.layers.gla

    assert fla.layers.gla.chunk_gla.ccq_cpu_replacement is gla_ops.chunk_gla
    assert fla.layers.gla.chunk_gla.ccq_cpu_original.__module__.startswith("fla.")


# --- GLA ----------------------------------------------------------------------------------------------

def gla_recurrence(q, k, v, g, scale, h0=None):
    """S_t = diag(exp g_t) S_{t-1} + k_t v_t^T ; o_t = scale * S_t^T q_t, one token at a time."""
    B, T, H, K = q.shape
    S = torch.zeros(B, H, K, v.shape[-1], dtype=f64) if h0 is None else h0.clone()
    out = []
    for t in range(T):
        S = S * g[:, t].exp().unsqueeze(-1) + k[:, t].unsqueeze(-1) * v[:, t].unsqueeze(-2)
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S))
    return torch.stack(out, 1), S


def _gla_inputs(B, T, H=2, K=8, V=6):
    q, k = torch.randn(B, T, H, K, dtype=f64), torch.randn(B, T, H, K, dtype=f64)
    v = torch.randn(B, T, H, V, dtype=f64)
    g = F.logsigmoid(torch.randn(B, T, H, K, dtype=f64) * 3) / 4  # includes strong decays
    return q, k, v, g


@pytest.mark.parametrize("T", [1, 15, 16, 53])
def test_chunk_gla_against_recurrence(T):
    q, k, v, g = _gla_inputs(2, T)
    h0 = torch.randn(2, 2, 8, 6, dtype=f64)
    ref_o, ref_S = gla_recurrence(q, k, v, g, 8 ** -0.5, h0)
    o, S = gla_ops.chunk_gla(q, k, v, g, initial_state=h0.transpose(-1, -2), output_final_state=True,
                             state_v_first=True)
    torch.testing.assert_close(o, ref_o)
    torch.testing.assert_close(S.double().transpose(-1, -2), ref_S, rtol=1e-6, atol=1e-6)  # states are fp32
    o2, _ = gla_ops.fused_recurrent_gla(q, k, v, gk=g, initial_state=h0.transpose(-1, -2), state_v_first=True)
    torch.testing.assert_close(o2, ref_o)


def test_chunk_gla_survives_decay_that_would_overflow_a_factorised_form():
    q, k, v, _ = _gla_inputs(1, 64)
    g = torch.full_like(q, -30.0)  # exp(30 * 16) overflows any exp(-G_j) factor
    o, _ = gla_ops.chunk_gla(q, k, v, g)
    ref, _ = gla_recurrence(q, k, v, g, 8 ** -0.5)
    assert torch.isfinite(o).all()
    torch.testing.assert_close(o, ref)


def test_chunk_gla_varlen():
    lengths = [5, 40, 17]
    q, k, v, g = _gla_inputs(1, sum(lengths))
    cu = torch.tensor([0, 5, 45, 62])
    o, S = gla_ops.chunk_gla(q, k, v, g, output_final_state=True, cu_seqlens=cu)
    for i in range(3):
        s = slice(cu[i], cu[i + 1])
        ref_o, ref_S = gla_recurrence(q[:, s], k[:, s], v[:, s], g[:, s], 8 ** -0.5)
        torch.testing.assert_close(o[:, s], ref_o)
        torch.testing.assert_close(S[i : i + 1].double(), ref_S, rtol=1e-6, atol=1e-6)


# --- gated delta rule -----------------------------------------------------------------------------------

def gdn_recurrence(q, k, v, g, beta, scale, h0=None):
    """S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T ; o_t = scale * S_t^T q_t."""
    B, T, H, K = q.shape
    S = torch.zeros(B, H, K, v.shape[-1], dtype=f64) if h0 is None else h0.clone()
    out = []
    for t in range(T):
        S = S * g[:, t].exp()[..., None, None]
        err = v[:, t] - torch.einsum("bhkv,bhk->bhv", S, k[:, t])
        S = S + beta[:, t, :, None, None] * k[:, t].unsqueeze(-1) * err.unsqueeze(-2)
        out.append(torch.einsum("bhk,bhkv->bhv", q[:, t] * scale, S))
    return torch.stack(out, 1), S


def _unit(x):
    return x / x.norm(dim=-1, keepdim=True)


@pytest.mark.parametrize("T", [1, 63, 64, 100])
def test_chunk_gated_delta_rule_against_recurrence(T):
    B, H, K, V = 2, 2, 8, 6
    q, k = _unit(torch.randn(B, T, H, K, dtype=f64)), _unit(torch.randn(B, T, H, K, dtype=f64))
    v = torch.randn(B, T, H, V, dtype=f64)
    g = -torch.rand(B, T, H, dtype=f64)
    beta = torch.rand(B, T, H, dtype=f64)
    h0 = torch.randn(B, H, K, V, dtype=f64)
    ref_o, ref_S = gdn_recurrence(q, k, v, g, beta, K ** -0.5, h0)
    o, S = gdn_ops.chunk_gated_delta_rule(q, k, v, g, beta, initial_state=h0.transpose(-1, -2),
                                          output_final_state=True, state_v_first=True)
    torch.testing.assert_close(o, ref_o)
    torch.testing.assert_close(S.double().transpose(-1, -2), ref_S, rtol=1e-5, atol=1e-5)


def test_gated_delta_rule_in_kernel_options_and_grouped_values():
    """l2norm, the GDN gate, beta sigmoid x2 and two value heads per key head, all as the layer calls it."""
    B, T, H, HV, K, V = 1, 70, 2, 4, 8, 4
    q, k = torch.randn(B, T, H, K, dtype=f64), torch.randn(B, T, H, K, dtype=f64)
    v = torch.randn(B, T, HV, V, dtype=f64)
    a, b = torch.randn(B, T, HV, dtype=f64), torch.randn(B, T, HV, dtype=f64)
    A_log, dt_bias = torch.rand(HV, dtype=f64), torch.randn(HV, dtype=f64)
    qn = q / torch.sqrt((q * q).sum(-1, keepdim=True) + 1e-6)
    kn = k / torch.sqrt((k * k).sum(-1, keepdim=True) + 1e-6)
    g = -A_log.exp() * torch.log1p((a + dt_bias).exp())
    beta = 2 * torch.sigmoid(b)
    ref_o, _ = gdn_recurrence(qn.repeat_interleave(2, 2), kn.repeat_interleave(2, 2), v, g, beta, K ** -0.5)
    for fn in (gdn_ops.chunk_gated_delta_rule, gdn_ops.fused_recurrent_gated_delta_rule):
        o, _ = fn(q=q, k=k, v=v, g=a, beta=b, use_qk_l2norm_in_kernel=True, use_gate_in_kernel=True, A_log=A_log,
                  dt_bias=dt_bias, use_beta_sigmoid_in_kernel=True, allow_neg_eigval=True)
        torch.testing.assert_close(o, ref_o)


def test_gated_delta_rule_varlen():
    B, H, K, V = 1, 2, 4, 4
    cu = torch.tensor([0, 30, 31, 100])
    q, k = _unit(torch.randn(B, 100, H, K, dtype=f64)), _unit(torch.randn(B, 100, H, K, dtype=f64))
    v, g, beta = torch.randn(B, 100, H, V, dtype=f64), -torch.rand(B, 100, H, dtype=f64), torch.rand(B, 100, H, dtype=f64)
    o, _ = gdn_ops.chunk_gated_delta_rule(q, k, v, g, beta, cu_seqlens=cu)
    for i in range(3):
        s = slice(cu[i], cu[i + 1])
        torch.testing.assert_close(o[:, s], gdn_recurrence(q[:, s], k[:, s], v[:, s], g[:, s], beta[:, s], K ** -0.5)[0])


# --- short convolution ------------------------------------------------------------------------------------

def conv_direct(x, weight, bias, history):
    """y_t = silu(bias + sum_w weight[:, w] * x_{t - (W-1) + w}), earlier inputs from history [B, D, W]."""
    B, T, D = x.shape
    W = weight.shape[1]
    seq = torch.cat([history.transpose(1, 2), x], dim=1)  # [B, W + T, D]
    ys = []
    for t in range(T):
        window = seq[:, t + 1 : t + 1 + W]  # the W inputs ending at x_t
        ys.append(F.silu((window * weight.T).sum(1) + bias))
    return torch.stack(ys, 1), seq[:, -W:].transpose(1, 2)


def test_causal_conv1d_prefill_state_and_residual():
    B, T, D, W = 2, 9, 5, 4
    x, weight, bias = torch.randn(B, T, D, dtype=f64), torch.randn(D, W, dtype=f64), torch.randn(D, dtype=f64)
    history = torch.randn(B, D, W, dtype=f64)
    residual = torch.randn(B, T, D, dtype=f64)
    ref_y, ref_state = conv_direct(x, weight, bias, history)
    y, state = cpu_ops.causal_conv1d(x, weight, bias, residual=residual, initial_state=history,
                                     output_final_state=True, activation="silu")
    torch.testing.assert_close(y, ref_y + residual)
    torch.testing.assert_close(state, ref_state)
    y0, _ = cpu_ops.causal_conv1d(x, weight, bias, activation="swish")
    torch.testing.assert_close(y0, conv_direct(x, weight, bias, torch.zeros(B, D, W, dtype=f64))[0])


def test_causal_conv1d_short_sequence_keeps_old_history_in_state():
    x, weight = torch.randn(1, 2, 3, dtype=f64), torch.randn(3, 4, dtype=f64)
    history = torch.randn(1, 3, 4, dtype=f64)
    _, state = cpu_ops.causal_conv1d(x, weight, None, initial_state=history, output_final_state=True)
    torch.testing.assert_close(state, torch.cat([history[..., 2:], x.transpose(1, 2)], -1))


def test_causal_conv1d_update_steps_equal_prefill():
    B, T, D, W = 2, 7, 3, 4
    x, weight, bias = torch.randn(B, T, D, dtype=f64), torch.randn(D, W, dtype=f64), torch.randn(D, dtype=f64)
    ref_y, _ = conv_direct(x, weight, bias, torch.zeros(B, D, W, dtype=f64))
    cache = torch.zeros(B, D, W, dtype=f64)
    for t in range(T):
        y, returned = cpu_ops.causal_conv1d_update(x[:, t : t + 1], cache, weight=weight, bias=bias, activation="silu")
        assert returned is cache  # updated in place, as fla's kernel does
        torch.testing.assert_close(y[:, 0], ref_y[:, t])


def test_causal_conv1d_varlen():
    x, weight = torch.randn(1, 10, 3, dtype=f64), torch.randn(3, 4, dtype=f64)
    cu = torch.tensor([0, 3, 10])
    y, _ = cpu_ops.causal_conv1d(x, weight, None, cu_seqlens=cu, activation="silu")
    zeros = torch.zeros(1, 3, 4, dtype=f64)
    torch.testing.assert_close(y[:, :3], conv_direct(x[:, :3], weight, 0.0, zeros)[0])
    torch.testing.assert_close(y[:, 3:], conv_direct(x[:, 3:], weight, 0.0, zeros)[0])


# --- norms, activations, loss ------------------------------------------------------------------------------

def test_rms_norm_with_prenorm_residual():
    x, res, w = torch.randn(3, 5, 16), torch.randn(3, 5, 16), torch.randn(16)
    y, res_out = cpu_ops.rms_norm(x, w, None, residual=res, eps=1e-5, prenorm=True)
    s = x.double() + res.double()
    ref = s / torch.sqrt(s.pow(2).mean(-1, keepdim=True) + 1e-5) * w.double()
    torch.testing.assert_close(y.double(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(res_out.double(), s, rtol=1e-6, atol=1e-6)
    xb = x.bfloat16()
    yb, kept = cpu_ops.rms_norm(xb, w, None, prenorm=True, residual_in_fp32=True)
    assert yb.dtype == torch.bfloat16 and kept.dtype == torch.float32


@pytest.mark.parametrize("activation", ["swish", "sigmoid"])
def test_rms_norm_gated(activation):
    x, g, w = torch.randn(4, 8, dtype=f64), torch.randn(4, 8, dtype=f64), torch.randn(8, dtype=f64)
    normed = x / torch.sqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    gate = g / (1 + (-g).exp()) if activation == "swish" else 1 / (1 + (-g).exp())
    torch.testing.assert_close(cpu_ops.rms_norm_gated(x, g, w, None, activation=activation), normed * gate)


def test_swiglu_and_activations():
    x, y = torch.randn(5, 7, dtype=f64), torch.randn(5, 7, dtype=f64)
    silu = x / (1 + (-x).exp())
    torch.testing.assert_close(cpu_ops.swiglu(x, y), silu * y)
    w, b = torch.randn(3, 7, dtype=f64), torch.randn(3, dtype=f64)
    torch.testing.assert_close(cpu_ops.swiglu_linear(x, y, w, b), (silu * y) @ w.T + b)
    torch.testing.assert_close(cpu_ops.swish(x), silu)
    torch.testing.assert_close(cpu_ops.sigmoid(x), 1 / (1 + (-x).exp()))


def test_fused_cross_entropy_forward():
    from fla.modules import FusedCrossEntropyLoss

    logits, target = torch.randn(6, 11), torch.tensor([1, 2, -100, 4, 5, 0])
    crit = FusedCrossEntropyLoss(label_smoothing=0.1, lse_square_scale=1e-3)
    loss = cpu_ops.fused_cross_entropy_forward(crit, logits, target)
    terms = []
    for row, t in zip(logits.double(), target.tolist()):
        if t == -100:
            continue
        lse = math.log(row.exp().sum().item())
        nll = lse - row[t].item()
        smooth = lse - row.mean().item()
        terms.append(0.9 * nll + 0.1 * smooth + 1e-3 * lse * lse)
    assert loss.item() == pytest.approx(sum(terms) / len(terms), rel=1e-5)


# --- softmax attention and rotary ----------------------------------------------------------------------------

def attention_loop(q, k, v, window=None):
    """Each query row attends keys up to its own absolute position (bottom-right causal), one at a time."""
    B, Tq, H, D = q.shape
    Tk = k.shape[1]
    out = torch.zeros_like(q)
    for b in range(B):
        for h in range(H):
            hk = h // (H // k.shape[2])
            for i in range(Tq):
                last = i + Tk - Tq
                first = 0 if window is None else max(0, last - window)
                scores = torch.tensor([(q[b, i, h] * k[b, j, hk]).sum() / math.sqrt(D) for j in range(first, last + 1)])
                p = torch.softmax(scores, 0)
                out[b, i, h] = sum(p[n] * v[b, j, hk] for n, j in enumerate(range(first, last + 1)))
    return out


@pytest.mark.parametrize("Tq,Tk,window", [(6, 6, None), (1, 7, None), (3, 8, None), (6, 6, 2)])
def test_flash_attn_func(Tq, Tk, window):
    q = torch.randn(2, Tq, 4, 8, dtype=f64)
    k, v = torch.randn(2, Tk, 2, 8, dtype=f64), torch.randn(2, Tk, 2, 8, dtype=f64)  # grouped-query: 2 kv heads
    ws = (-1, -1) if window is None else (window, 0)
    torch.testing.assert_close(attn_ops.flash_attn_func(q, k, v, causal=True, window_size=ws),
                               attention_loop(q, k, v, window))


def test_flash_attn_varlen_func():
    q, k, v = (torch.randn(9, 2, 4, dtype=f64) for _ in range(3))
    cu = torch.tensor([0, 4, 9])
    out = attn_ops.flash_attn_varlen_func(q, k, v, cu, cu, 5, 5, causal=True)
    for s in (slice(0, 4), slice(4, 9)):
        torch.testing.assert_close(out[s], attention_loop(q[None, s], k[None, s], v[None, s])[0])


def rotate_reference(x, positions, base=10000.0):
    """GPT-NeoX rotary: pairs (i, i + D/2) rotated by angle pos * base^(-2i/D)."""
    D = x.shape[-1]
    out = x.clone()
    for t, pos in enumerate(positions):
        for i in range(D // 2):
            theta = pos * base ** (-2 * i / D)
            a, b = x[:, t, :, i], x[:, t, :, i + D // 2]
            out[:, t, :, i] = a * math.cos(theta) - b * math.sin(theta)
            out[:, t, :, i + D // 2] = b * math.cos(theta) + a * math.sin(theta)
    return out


def _tables(D, n, base=10000.0):
    inv = 1.0 / base ** (torch.arange(0, D, 2, dtype=f64) / D)
    freqs = torch.outer(torch.arange(n, dtype=f64), inv)
    return freqs.cos(), freqs.sin()


def test_rotary_offsets_and_packing():
    x = torch.randn(2, 5, 3, 8, dtype=f64)
    cos, sin = _tables(8, 32)
    torch.testing.assert_close(cpu_ops.rotary_embedding(x, cos, sin, seqlen_offsets=3),
                               rotate_reference(x, range(3, 8)))
    per_row = cpu_ops.rotary_embedding(x, cos, sin, seqlen_offsets=torch.tensor([0, 7]))
    torch.testing.assert_close(per_row[1:], rotate_reference(x[1:], range(7, 12)))
    packed = x[:1]
    out = cpu_ops.rotary_embedding(packed, cos, sin, cu_seqlens=torch.tensor([0, 2, 5]))
    torch.testing.assert_close(out[:, :2], rotate_reference(packed[:, :2], range(0, 2)))
    torch.testing.assert_close(out[:, 2:], rotate_reference(packed[:, 2:], range(0, 3)))


def test_a_dispatched_entry_point_runs_through_flas_own_dispatch(monkeypatch):
    """fla dispatches causal_conv1d_update itself: the CPU version is registered as an fla backend for CPU tensors,
    fla's name stays fla's, and inside fla_kernels_on_cpu (Triton's interpreter) fla's own kernel is chosen."""
    import fla.backends
    import fla.modules.causal_conv1d.ops as conv_ops

    from ccq_eval.ops import cpu_forms

    cpu_forms.install_cpu_backend()
    assert getattr(conv_ops.causal_conv1d_update, "ccq_cpu_replacement", None) is None  # not replaced: dispatched
    registry = fla.backends._function_registries[inspect.unwrap(conv_ops.causal_conv1d_update)]
    assert [b.backend_type for b in registry._get_sorted_backends()] == ["ccq_eval_cpu"]
    x, weight = torch.randn(2, 1, 3, dtype=f64), torch.randn(3, 4, dtype=f64)
    cache = torch.randn(2, 3, 4, dtype=f64)
    y, _ = conv_ops.causal_conv1d_update(x, cache.clone(), weight=weight, activation="silu")
    expected, _ = cpu_ops.causal_conv1d_update(x, cache.clone(), weight=weight, activation="silu")
    assert torch.equal(y, expected)
    assert cpu_forms._takes_cpu_tensors(x) == (True, None)
    assert cpu_forms._takes_cpu_tensors(torch.zeros(1, device="meta"))[0] is False
    with cpu_forms.fla_kernels_on_cpu():
        assert cpu_forms._takes_cpu_tensors(x)[0] is False
    monkeypatch.setenv("FLA_DISABLE_BACKEND_DISPATCH", "1")  # fla's dispatch turned off: the name is replaced instead
    assert not cpu_forms.uses_fla_dispatch(next(p for p in cpu_forms.patches() if p.dispatched))
