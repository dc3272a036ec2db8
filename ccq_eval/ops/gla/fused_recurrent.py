"""GLA's decoding step with its state written where it lies: ``S <- diag(exp(g)) S + k v^T`` and ``o = scale S^T q``
for one token, the new state stored over ``initial_state`` (fla's layers keep it V-first, ``[B, H, V, K]``) and
returned as that same tensor. fla 0.6's ``fused_recurrent_gla`` allocates a fresh state every call, which the engine's
fixed buffers then had to copy home: a second pass over the largest tensor of the step.

``fused_recurrent_gla_in_place`` takes fla's arguments; it returns None for a call it does not take (several tokens,
packed sequences, no state to carry, gradients, fla's other options), which then goes to fla's function
(ops/in_place.py routes it). A Triton kernel on a GPU (and on the CPU under Triton's interpreter, which the
interpreter tier checks against fla's kernel); torch's in-place ops elsewhere."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from ccq_eval.ops.in_place import runs_triton, takes_in_place


@triton.jit
def _gla_step_kernel(q, k, v, g, state, o, scale, H: tl.constexpr, K: tl.constexpr, V: tl.constexpr,
                     BK: tl.constexpr, BV: tl.constexpr):
    i_v, i_bh = tl.program_id(0), tl.program_id(1)
    i_b, i_h = i_bh // H, i_bh % H
    o_k = tl.arange(0, BK)
    o_v = i_v * BV + tl.arange(0, BV)
    m_k, m_v = o_k < K, o_v < V
    at_k = (i_b * H + i_h) * K + o_k  # q, k, g: [B, 1, H, K]
    b_q = tl.load(q + at_k, mask=m_k, other=0).to(tl.float32) * scale
    b_k = tl.load(k + at_k, mask=m_k, other=0).to(tl.float32)
    b_g = tl.load(g + at_k, mask=m_k, other=0).to(tl.float32)
    b_v = tl.load(v + (i_b * H + i_h) * V + o_v, mask=m_v, other=0).to(tl.float32)
    p_s = state + i_bh * V * K + o_v[:, None] * K + o_k[None, :]  # [B, H, V, K]
    m_s = m_v[:, None] & m_k[None, :]
    b_s = tl.load(p_s, mask=m_s, other=0) * tl.exp(b_g)[None, :] + b_v[:, None] * b_k[None, :]
    tl.store(p_s, b_s, mask=m_s)
    tl.store(o + (i_b * H + i_h) * V + o_v, tl.sum(b_s * b_q[None, :], axis=1).to(o.dtype.element_ty), mask=m_v)


def blocks(K: int, V: int) -> tuple[int, int]:
    """(BK, BV): the whole key dimension in one block, values in blocks that keep a program's tile at 4K elements."""
    BK = triton.next_power_of_2(K)
    return BK, max(1, min(triton.next_power_of_2(V), 4096 // BK))


def _triton_step(q, k, v, g, state, scale):
    B, _, H, K = q.shape
    V = v.shape[-1]
    o = torch.empty_like(v)
    BK, BV = blocks(K, V)
    _gla_step_kernel[(triton.cdiv(V, BV), B * H)](q.contiguous(), k.contiguous(), v.contiguous(), g.contiguous(),
                                                   state, o, scale, H=H, K=K, V=V, BK=BK, BV=BV)
    return o


def _torch_step(q, k, v, g, state, scale):
    B, _, H, K = q.shape
    V = v.shape[-1]
    f = state.dtype
    state.mul_(g[:, 0].to(f).exp().unsqueeze(-2))  # decay along the keys: [B, H, 1, K]
    state.view(B * H, V, K).baddbmm_(v[:, 0].to(f).reshape(B * H, V, 1), k[:, 0].to(f).reshape(B * H, 1, K))
    o = state.view(B * H, V, K) @ (q[:, 0].to(f) * scale).reshape(B * H, K, 1)
    return o.view(B, 1, H, V).to(v.dtype)


def fused_recurrent_gla_in_place(q=None, k=None, v=None, gk=None, gv=None, scale=None, initial_state=None,
                                 output_final_state=False, reverse=False, state_v_first=False, cu_seqlens=None,
                                 **kwargs):
    """fla's ``fused_recurrent_gla`` for one token a row, the state updated in place: ``(o, initial_state)``; None
    where it does not apply."""
    if gk is None or gv is not None or reverse or kwargs or not state_v_first:
        return None
    if not takes_in_place(q, v, initial_state, output_final_state, cu_seqlens):
        return None
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    step = _triton_step if runs_triton(q) else _torch_step
    return step(q, k, v, gk, initial_state, scale), initial_state
