"""Transformer++'s attention on a CPU: flash-attn's entry points fla's attention layer calls, through torch's
scaled_dot_product_attention (sliding windows and packed sequences included)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ccq_eval.ops.shared_cpu_forms import work_dtype


# --- softmax attention (flash-attn's API) and rotary embeddings -------------------------------------------

def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), **kwargs):
    """``q [B, Tq, H, D]``, ``k, v [B, Tk, Hkv, D]``; causal is aligned bottom-right, as flash-attn does."""
    if dropout_p:
        raise NotImplementedError("ccq-eval's CPU backend: attention dropout")
    B, Tq, H, D = q.shape
    Tk, Hkv = k.shape[1], k.shape[2]
    if Hkv != H:
        k, v = (x.repeat_interleave(H // Hkv, dim=2) for x in (k, v))
    f, dtype = work_dtype(q), q.dtype
    q, k, v = (x.to(f).transpose(1, 2) for x in (q, k, v))
    if window_size == (-1, -1) and (not causal or Tq == 1 or Tq == Tk):
        # no explicit mask: SDPA's fused CPU kernel, O(T) memory (a T x T mask would be 64M entries at 8K);
        # one query against the whole cache is bottom-right causal with nothing masked
        o = F.scaled_dot_product_attention(q, k, v, is_causal=causal and Tq > 1, scale=softmax_scale)
        return o.transpose(1, 2).to(dtype)
    i = torch.arange(Tq, device=q.device).unsqueeze(1) + (Tk - Tq)
    j = torch.arange(Tk, device=q.device).unsqueeze(0)
    allowed = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device)
    if causal:
        allowed &= j <= i
    left, right = window_size
    if left >= 0:
        allowed &= j >= i - left
    if right >= 0:
        allowed &= j <= i + right
    o = F.scaled_dot_product_attention(q, k, v, attn_mask=allowed, scale=softmax_scale)
    return o.transpose(1, 2).to(dtype)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q=None, max_seqlen_k=None,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), **kwargs):
    """Packed ``q [total_q, H, D]``; each sequence attends only within itself."""
    bq, bk = cu_seqlens_q.tolist(), cu_seqlens_k.tolist()
    outs = [
        flash_attn_func(q[None, qs:qe], k[None, ks:ke], v[None, ks:ke], dropout_p, softmax_scale, causal,
                        window_size)[0]
        for qs, qe, ks, ke in zip(bq[:-1], bq[1:], bk[:-1], bk[1:])
    ]
    return torch.cat(outs, dim=0)
