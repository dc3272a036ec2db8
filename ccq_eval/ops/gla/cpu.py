"""GLA's read on a CPU: torch versions of fla's chunk_gla, fused_recurrent_gla and fused_chunk_gla, chunked and
vectorised (fla's naive.py loops over every token). Tested against a per-position recurrence and fla's naive
reference in tests/models/test_cpu_backend.py."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ccq_eval.ops.shared_cpu_forms import from_chunks, over_sequences, pad_time, reject, to_chunks, work_dtype

GLA_CHUNK = 16  # GLA's per-channel decay is applied exactly inside a chunk: [C, C, K] per chunk
SLAB_ELEMENTS = 1 << 24  # cap on the intra-chunk GLA tensor, bounding memory at long T


# --- GLA: S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,  o_t = scale * S_t^T q_t -------------------------

def _gla_dense(q, k, v, g, initial_state=None, output_final_state=False, scale=None, state_v_first=False):
    B, T, H, K = q.shape
    V = v.shape[-1]
    f = work_dtype(q)
    out_dtype = v.dtype
    scale = K ** -0.5 if scale is None else scale
    C = max(1, min(GLA_CHUNK, T))  # a decoding step (T = 1) is not padded to a whole chunk
    pad = (-T) % C
    q, k, v, g = (pad_time(x.to(f), pad) for x in (q, k, v, g))  # g = 0 on padding: no decay
    qc, kc, vc, gc = (to_chunks(x, C) for x in (q * scale, k, v, g))  # [B, H, NC, C, *]
    G = gc.cumsum(dim=3)  # log decay from the chunk start, <= 0
    G_last = G[:, :, :, -1:]

    # intra-chunk scores with the exact per-channel decay exp(G_i - G_j), i >= j, in slabs of chunks
    NC = qc.shape[2]
    causal = torch.ones(C, C, dtype=torch.bool, device=q.device).tril()
    per_chunk = B * H * C * C * K
    step = max(1, SLAB_ELEMENTS // per_chunk)
    scores = []
    for s in range(0, NC, step):
        Gs = G[:, :, s : s + step]
        decay = (Gs.unsqueeze(-2) - Gs.unsqueeze(-3)).masked_fill(~causal[..., None], float("-inf")).exp()
        scores.append(torch.einsum("bhnik,bhnjk,bhnijk->bhnij", qc[:, :, s : s + step], kc[:, :, s : s + step], decay))
    intra = torch.cat(scores, dim=2) @ vc

    # inter-chunk: carry the state across chunks (decay factors all <= 1)
    q_decayed = qc * G.exp()
    k_to_end = kc * (G_last - G).exp()
    chunk_decay = G_last.exp().squeeze(3)  # [B, H, NC, K]
    S = q.new_zeros(B, H, K, V)
    if initial_state is not None:
        h0 = initial_state.to(f)
        S = S + (h0.transpose(-1, -2) if state_v_first else h0)
    inter = []  # a list, not slice assignment: autograd would zero-fill a full-size gradient per slice
    for n in range(NC):
        inter.append(q_decayed[:, :, n] @ S)
        S = S * chunk_decay[:, :, n].unsqueeze(-1) + k_to_end[:, :, n].transpose(-1, -2) @ vc[:, :, n]
    o = from_chunks(intra + torch.stack(inter, dim=2), T).to(out_dtype)
    final = None
    if output_final_state:
        final = (S.transpose(-1, -2) if state_v_first else S).float().contiguous()
    return o, final


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, state_v_first=False,
              cu_seqlens=None, cu_seqlens_cpu=None, **kwargs):
    return over_sequences(_gla_dense, cu_seqlens, initial_state, output_final_state, (q, k, v, g),
                           scale=scale, state_v_first=state_v_first)


def fused_recurrent_gla(q, k, v, gk=None, gv=None, scale=None, initial_state=None, output_final_state=False,
                        reverse=False, state_v_first=False, cu_seqlens=None, **kwargs):
    reject("fused_recurrent_gla", gv=gv, reverse=reverse)
    if gk is None:
        gk = torch.zeros_like(q)
    return chunk_gla(q, k, v, gk, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                     state_v_first=state_v_first, cu_seqlens=cu_seqlens)


def fused_chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, **kwargs):
    return chunk_gla(q, k, v, g, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                     state_v_first=kwargs.get("state_v_first", False), cu_seqlens=kwargs.get("cu_seqlens"))
