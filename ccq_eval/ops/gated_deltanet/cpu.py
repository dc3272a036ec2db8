"""Gated DeltaNet's read on a CPU: torch versions of fla's chunk_gated_delta_rule and
fused_recurrent_gated_delta_rule (the WY form per chunk), and the GDN gate. Tested in tests/models/test_cpu_backend.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ccq_eval.ops.shared_cpu_forms import from_chunks, l2norm, over_sequences, pad_time, reject, to_chunks, work_dtype

GDN_CHUNK = 64


# --- Gated delta rule: S_t = exp(g_t) S_{t-1} (I - b_t k_t k_t^T) + b_t k_t v_t^T (K-first layout) -------

def gdn_gate(g, A_log, dt_bias=None):
    """The GDN decay in log space: -exp(A_log) * softplus(g + dt_bias)."""
    g = g.float() if g.dtype != torch.float64 else g
    if dt_bias is not None:
        g = g + dt_bias.to(g.dtype)
    return -A_log.to(g.dtype).exp() * F.softplus(g)


def _gdn_dense(q, k, v, g, beta, initial_state=None, output_final_state=False, scale=None, state_v_first=False):
    B, T, H, K = q.shape
    V = v.shape[-1]
    f = work_dtype(q)
    C = max(1, min(GDN_CHUNK, T))  # a decoding step (T = 1) is not padded to a whole chunk
    pad = (-T) % C
    q, k, v = (pad_time(x.to(f), pad) for x in (q, k, v))
    g, beta = (pad_time(x.to(f).unsqueeze(-1), pad).squeeze(-1) for x in (g, beta))  # beta = 0: no write
    qc, kc, vc = (to_chunks(x, C) for x in (q * scale, k, v))  # [B, H, NC, C, *]
    gc, bc = (to_chunks(x, C) for x in (g, beta))  # [B, H, NC, C]
    G = gc.cumsum(dim=-1)
    tril = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    decay = (G.unsqueeze(-1) - G.unsqueeze(-2)).masked_fill(~tril, float("-inf")).exp()  # exp(G_i - G_j), i >= j
    k_beta = kc * bc.unsqueeze(-1)
    # WY form: (I + strictly_lower(diag(beta) K K^T * decay)) u = beta v, likewise w for the decayed keys
    M = ((k_beta @ kc.transpose(-1, -2)) * decay).tril(-1)
    eye = torch.eye(C, dtype=f, device=q.device)
    lhs = eye + M
    u = torch.linalg.solve_triangular(lhs, vc * bc.unsqueeze(-1), upper=False, unitriangular=True)
    w = torch.linalg.solve_triangular(lhs, k_beta * G.exp().unsqueeze(-1), upper=False, unitriangular=True)
    scores = (qc @ kc.transpose(-1, -2)) * decay
    q_decayed = qc * G.exp().unsqueeze(-1)
    G_last = G[..., -1:]
    k_to_end = kc * (G_last - G).exp().unsqueeze(-1)
    S = q.new_zeros(B, H, K, V)
    if initial_state is not None:
        h0 = initial_state.to(f)
        S = S + (h0.transpose(-1, -2) if state_v_first else h0)
    out = []  # a list, not slice assignment (see _gla_dense)
    for n in range(qc.shape[2]):
        v_new = u[:, :, n] - w[:, :, n] @ S
        out.append(q_decayed[:, :, n] @ S + scores[:, :, n] @ v_new)
        S = S * G_last[:, :, n].exp().unsqueeze(-1) + k_to_end[:, :, n].transpose(-1, -2) @ v_new
    o = from_chunks(torch.stack(out, dim=2), T)
    final = None
    if output_final_state:
        final = (S.transpose(-1, -2) if state_v_first else S).float().contiguous()
    return o, final


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None,
                           cp_context=None, use_gate_in_kernel=False, A_log=None, dt_bias=None, gk=None, gv=None,
                           **kwargs):
    reject("gated_delta_rule", cp_context=cp_context, gk=gk, gv=gv)
    out_dtype = v.dtype
    if use_qk_l2norm_in_kernel:
        q, k = l2norm(q), l2norm(k)
    if use_gate_in_kernel:
        g = gdn_gate(g, A_log, dt_bias)
    if use_beta_sigmoid_in_kernel:
        beta = beta.to(work_dtype(beta)).sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    H, HV = q.shape[2], v.shape[2]
    if HV != H:  # grouped value attention: value head hv reads query/key head hv // (HV // H)
        q, k = (x.repeat_interleave(HV // H, dim=2) for x in (q, k))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, final = over_sequences(_gdn_dense, cu_seqlens, initial_state, output_final_state, (q, k, v, g, beta),
                               scale=scale, state_v_first=state_v_first)
    return o.to(out_dtype), final


def fused_recurrent_gated_delta_rule(q, k, v, g=None, gk=None, gv=None, beta=None, scale=None, initial_state=None,
                                     output_final_state=False, use_qk_l2norm_in_kernel=False, use_gate_in_kernel=False,
                                     A_log=None, dt_bias=None, use_beta_sigmoid_in_kernel=False,
                                     allow_neg_eigval=False, state_v_first=False, cu_seqlens=None, **kwargs):
    if g is None:
        g = torch.zeros(v.shape[:3], dtype=torch.float32, device=v.device)
    if beta is None:
        beta = torch.ones(v.shape[:3], dtype=torch.float32, device=v.device)
    return chunk_gated_delta_rule(
        q, k, v, g, beta, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
        use_qk_l2norm_in_kernel=use_qk_l2norm_in_kernel, use_beta_sigmoid_in_kernel=use_beta_sigmoid_in_kernel,
        allow_neg_eigval=allow_neg_eigval, state_v_first=state_v_first, cu_seqlens=cu_seqlens,
        use_gate_in_kernel=use_gate_in_kernel, A_log=A_log, dt_bias=dt_bias, gk=gk, gv=gv,
    )
