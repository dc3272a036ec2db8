"""Gated DeltaNet's decoding step with its state written where it lies: for one token, ``S <- exp(g) S``,
``S <- S + beta (v - S k) k^T`` and ``o = scale S q`` (fla's GDN layers keep S V-first, ``[B, HV, V, K]``; DeltaNet's,
which has no decay, K-first, ops/delta_net/fused_recurrent.py), the new state stored over ``initial_state`` and returned as
that same tensor (see ops/gla/fused_recurrent.py for why). fla's in-kernel
options run inside it as fla runs them: q and k L2-normalised (``x / sqrt(|x|^2 + 1e-6)``), the gate
``-exp(A_log) softplus(g + dt_bias)``, beta through a sigmoid (times 2 with negative eigenvalues), value heads
grouped over query heads. A call it does not take returns None and goes on to fla's function."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ccq_eval.ops.gated_deltanet.cpu import gdn_gate
from ccq_eval.ops.gla.fused_recurrent import blocks
from ccq_eval.ops.shared_cpu_forms import l2norm
from ccq_eval.ops.in_place import runs_triton, takes_in_place


@triton.jit
def _gdn_step_kernel(q, k, v, g, beta, A_log, dt_bias, state, o, scale, H: tl.constexpr, HV: tl.constexpr,
                     K: tl.constexpr, V: tl.constexpr, BK: tl.constexpr, BV: tl.constexpr, L2NORM: tl.constexpr,
                     DECAY: tl.constexpr, GATE: tl.constexpr, DT_BIAS: tl.constexpr, BETA_SIGMOID: tl.constexpr,
                     NEG_EIGVAL: tl.constexpr, V_FIRST: tl.constexpr):
    i_v, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_hv = i_bh // HV, i_bh % HV
    i_h = i_hv // (HV // H)
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k, m_v = o_k < K, o_v < V
    b_q = tl.load(q + (i_b * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
    b_k = tl.load(k + (i_b * H + i_h) * K + o_k, mask=m_k, other=0).to(tl.float32)
    if L2NORM:
        b_q = b_q / tl.sqrt(tl.sum(b_q * b_q) + 1e-6)
        b_k = b_k / tl.sqrt(tl.sum(b_k * b_k) + 1e-6)
    b_q = b_q * scale
    b_beta = tl.load(beta + i_b * HV + i_hv).to(tl.float32)
    if BETA_SIGMOID:
        b_beta = tl.sigmoid(b_beta)
        if NEG_EIGVAL:
            b_beta = b_beta * 2.0
    b_v = tl.load(v + (i_b * HV + i_hv) * V + o_v, mask=m_v, other=0).to(tl.float32)
    if V_FIRST:  # the tile is [BV, BK] either way
        p_s = state + i_bh * V * K + o_v[:, None] * K + o_k[None, :]  # [B, HV, V, K]
    else:
        p_s = state + i_bh * K * V + o_k[None, :] * V + o_v[:, None]  # [B, HV, K, V]
    m_s = m_v[:, None] & m_k[None, :]
    b_s = tl.load(p_s, mask=m_s, other=0)
    if DECAY:  # DeltaNet has none
        b_g = tl.load(g + i_b * HV + i_hv).to(tl.float32)
        if GATE:
            if DT_BIAS:
                b_g = b_g + tl.load(dt_bias + i_hv).to(tl.float32)
            b_g = -tl.exp(tl.load(A_log + i_hv).to(tl.float32)) * tl.where(b_g < 20.0, tl.log(1 + tl.exp(b_g)), b_g)
        b_s = b_s * tl.exp(b_g)
    b_v = b_beta * (b_v - tl.sum(b_s * b_k[None, :], axis=1))
    b_s = b_s + b_v[:, None] * b_k[None, :]
    tl.store(p_s, b_s, mask=m_s)
    tl.store(o + (i_b * HV + i_hv) * V + o_v, tl.sum(b_s * b_q[None, :], axis=1).to(o.dtype.element_ty), mask=m_v)


def _triton_step(q, k, v, g, beta, state, scale, A_log, dt_bias, l2, gate, beta_sigmoid, neg_eigval, v_first):
    B, _, H, K = q.shape
    HV, V = v.shape[2:]
    o = torch.empty_like(v)
    BK, BV = blocks(K, V)
    beta = beta.contiguous()
    _gdn_step_kernel[(triton.cdiv(V, BV), B * HV)](
        q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous() if g is not None else beta, beta,
        A_log if gate else beta, dt_bias if dt_bias is not None else beta, state, o, scale, H=H, HV=HV, K=K, V=V,
        BK=BK, BV=BV, L2NORM=l2, DECAY=g is not None, GATE=gate, DT_BIAS=dt_bias is not None,
        BETA_SIGMOID=beta_sigmoid, NEG_EIGVAL=neg_eigval, V_FIRST=v_first)
    return o


def _torch_step(q, k, v, g, beta, state, scale, A_log, dt_bias, l2, gate, beta_sigmoid, neg_eigval, v_first):
    B, _, H, K = q.shape
    HV, V = v.shape[2:]
    f = state.dtype
    q, k = ((l2norm(x) if l2 else x).to(f) for x in (q[:, 0], k[:, 0]))
    if HV != H:  # value head hv reads query/key head hv // (HV // H)
        q, k = (x.repeat_interleave(HV // H, dim=1) for x in (q, k))
    beta = beta[:, 0].to(f)
    if beta_sigmoid:
        beta = beta.sigmoid() * (2.0 if neg_eigval else 1.0)
    if g is not None:
        g = gdn_gate(g[:, 0], A_log, dt_bias) if gate else g[:, 0].to(f)
        state.mul_(g.exp()[..., None, None])
    keys, queries = k.reshape(B * HV, K, 1), (q * scale).reshape(B * HV, K, 1)
    if v_first:
        rows = state.view(B * HV, V, K)
        written = (v[:, 0].to(f) - (rows @ keys).view(B, HV, V)) * beta[..., None]
        rows.baddbmm_(written.reshape(B * HV, V, 1), keys.transpose(1, 2))
        o = rows @ queries
    else:  # K-first: the same products from the other side, each in place on the contiguous state
        columns = state.view(B * HV, K, V)
        written = (v[:, 0].to(f) - (keys.transpose(1, 2) @ columns).view(B, HV, V)) * beta[..., None]
        columns.baddbmm_(keys, written.reshape(B * HV, 1, V))
        o = queries.transpose(1, 2) @ columns
    return o.reshape(B, 1, HV, V).to(v.dtype)


def delta_step_in_place(q, k, v, g, beta, state, scale, A_log=None, dt_bias=None, l2=False, gate=False,
                        beta_sigmoid=False, neg_eigval=False, v_first=True):
    """One (gated) delta-rule token, ``state`` updated in place (V-first, or K-first with ``v_first=False``);
    ``g=None``: no decay. Returns ``o [B, 1, HV, V]``."""
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    step = _triton_step if runs_triton(q) else _torch_step
    return step(q, k, v, g, beta, state, scale, A_log, dt_bias, bool(l2), bool(gate), bool(beta_sigmoid),
                bool(neg_eigval), v_first)


def fused_recurrent_gated_delta_rule_in_place(q=None, k=None, v=None, g=None, gk=None, gv=None, beta=None, scale=None,
                                              initial_state=None, output_final_state=False,
                                              use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False, A_log=None,
                                              dt_bias=None, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                                              state_v_first=False, cu_seqlens=None, **kwargs):
    """fla's ``fused_recurrent_gated_delta_rule`` for one token a row, the state updated in place:
    ``(o, initial_state)``; None where it does not apply."""
    if g is None or beta is None or gk is not None or gv is not None or kwargs or not state_v_first:
        return None
    if (use_gate_in_kernel and A_log is None) or not takes_in_place(q, v, initial_state, output_final_state, cu_seqlens):
        return None
    return delta_step_in_place(q, k, v, g, beta, initial_state, scale, A_log, dt_bias, use_qk_l2norm_in_kernel,
                               use_gate_in_kernel, use_beta_sigmoid_in_kernel, allow_neg_eigval), initial_state
