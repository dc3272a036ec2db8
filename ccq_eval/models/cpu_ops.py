"""Torch implementations of the Triton-only functions fla 0.6's GLA, Gated DeltaNet and Transformer
layers call, with the same signatures, so the stock layers run on a CPU.

Why by hand: fla ships no CPU path (its kernels are Triton) and its ``naive.py`` references loop over
every token, have no ``cu_seqlens`` / V-first state support, and are too slow for 20K-token
evaluation. These are chunked and vectorised; ``cpu_backend`` installs them, and each one is tested
against an independent per-position recurrence or direct formula in ``tests/models/test_cpu_backend.py``.
Arguments fla accepts but a CPU run never needs (context parallelism, reverse scans) raise.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

GLA_CHUNK = 16  # GLA's per-channel decay is applied exactly inside a chunk: [C, C, K] per chunk
GDN_CHUNK = 64
SLAB_ELEMENTS = 1 << 24  # cap on the intra-chunk GLA tensor, bounding memory at long T


def _work_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def _reject(name: str, **unsupported) -> None:
    for arg, value in unsupported.items():
        if value is not None and value is not False:
            raise NotImplementedError(f"ccq-eval's CPU backend does not implement {name}({arg}=...)")


def _over_sequences(dense_fn, cu_seqlens, initial_state, output_final_state, tensors, **kwargs):
    """Run ``dense_fn`` on each packed sequence of ``cu_seqlens`` (B == 1) and re-pack the results."""
    if cu_seqlens is None:
        return dense_fn(*tensors, initial_state=initial_state, output_final_state=output_final_state, **kwargs)
    if tensors[0].shape[0] != 1:
        raise ValueError(f"with cu_seqlens the batch size must be 1, got {tensors[0].shape[0]}")
    bounds = cu_seqlens.tolist()
    outs, finals = [], []
    for i, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        h0 = initial_state[i : i + 1] if initial_state is not None else None
        o, ht = dense_fn(*(t[:, start:end] for t in tensors), initial_state=h0,
                         output_final_state=output_final_state, **kwargs)
        outs.append(o)
        finals.append(ht)
    out = torch.cat(outs, dim=1)
    return out, (torch.cat(finals) if output_final_state else None)


def _to_chunks(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """``[B, T, H, ...]`` (T a multiple of chunk) -> ``[B, H, NC, C, ...]``."""
    B, T, H = x.shape[:3]
    x = x.reshape(B, T // chunk, chunk, H, *x.shape[3:])
    return x.movedim(3, 1)


def _from_chunks(x: torch.Tensor, T: int) -> torch.Tensor:
    B, H, NC, C = x.shape[:4]
    return x.movedim(1, 3).reshape(B, NC * C, H, *x.shape[4:])[:, :T]


def _pad_time(x: torch.Tensor, pad: int) -> torch.Tensor:
    if not pad:
        return x
    widths = [0, 0] * (x.dim() - 2) + [0, pad]
    return F.pad(x, widths)


# --- GLA: S_t = diag(exp(g_t)) S_{t-1} + k_t v_t^T,  o_t = scale * S_t^T q_t -------------------------

def _gla_dense(q, k, v, g, initial_state=None, output_final_state=False, scale=None, state_v_first=False):
    B, T, H, K = q.shape
    V = v.shape[-1]
    f = _work_dtype(q)
    out_dtype = v.dtype
    scale = K ** -0.5 if scale is None else scale
    C = max(1, min(GLA_CHUNK, T))  # a decoding step (T = 1) is not padded to a whole chunk
    pad = (-T) % C
    q, k, v, g = (_pad_time(x.to(f), pad) for x in (q, k, v, g))  # g = 0 on padding: no decay
    qc, kc, vc, gc = (_to_chunks(x, C) for x in (q * scale, k, v, g))  # [B, H, NC, C, *]
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
    o = _from_chunks(intra + torch.stack(inter, dim=2), T).to(out_dtype)
    final = None
    if output_final_state:
        final = (S.transpose(-1, -2) if state_v_first else S).float().contiguous()
    return o, final


def chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, state_v_first=False,
              cu_seqlens=None, cu_seqlens_cpu=None, **kwargs):
    return _over_sequences(_gla_dense, cu_seqlens, initial_state, output_final_state, (q, k, v, g),
                           scale=scale, state_v_first=state_v_first)


def fused_recurrent_gla(q, k, v, gk=None, gv=None, scale=None, initial_state=None, output_final_state=False,
                        reverse=False, state_v_first=False, cu_seqlens=None, **kwargs):
    _reject("fused_recurrent_gla", gv=gv, reverse=reverse)
    if gk is None:
        gk = torch.zeros_like(q)
    return chunk_gla(q, k, v, gk, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                     state_v_first=state_v_first, cu_seqlens=cu_seqlens)


def fused_chunk_gla(q, k, v, g, scale=None, initial_state=None, output_final_state=False, **kwargs):
    return chunk_gla(q, k, v, g, scale=scale, initial_state=initial_state, output_final_state=output_final_state,
                     state_v_first=kwargs.get("state_v_first", False), cu_seqlens=kwargs.get("cu_seqlens"))


# --- Gated delta rule: S_t = exp(g_t) S_{t-1} (I - b_t k_t k_t^T) + b_t k_t v_t^T (K-first layout) -------

def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """fla's l2norm: x / sqrt(sum x^2 + eps), computed in float32 (or float64)."""
    xf = x.to(_work_dtype(x))
    return xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + eps)


def gdn_gate(g, A_log, dt_bias=None):
    """The GDN decay in log space: -exp(A_log) * softplus(g + dt_bias)."""
    g = g.float() if g.dtype != torch.float64 else g
    if dt_bias is not None:
        g = g + dt_bias.to(g.dtype)
    return -A_log.to(g.dtype).exp() * F.softplus(g)


def _gdn_dense(q, k, v, g, beta, initial_state=None, output_final_state=False, scale=None, state_v_first=False):
    B, T, H, K = q.shape
    V = v.shape[-1]
    f = _work_dtype(q)
    C = max(1, min(GDN_CHUNK, T))  # a decoding step (T = 1) is not padded to a whole chunk
    pad = (-T) % C
    q, k, v = (_pad_time(x.to(f), pad) for x in (q, k, v))
    g, beta = (_pad_time(x.to(f).unsqueeze(-1), pad).squeeze(-1) for x in (g, beta))  # beta = 0: no write
    qc, kc, vc = (_to_chunks(x, C) for x in (q * scale, k, v))  # [B, H, NC, C, *]
    gc, bc = (_to_chunks(x, C) for x in (g, beta))  # [B, H, NC, C]
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
    o = _from_chunks(torch.stack(out, dim=2), T)
    final = None
    if output_final_state:
        final = (S.transpose(-1, -2) if state_v_first else S).float().contiguous()
    return o, final


def chunk_gated_delta_rule(q, k, v, g, beta, scale=None, initial_state=None, output_final_state=False,
                           use_qk_l2norm_in_kernel=False, use_beta_sigmoid_in_kernel=False, allow_neg_eigval=False,
                           state_v_first=False, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None,
                           cp_context=None, use_gate_in_kernel=False, A_log=None, dt_bias=None, gk=None, gv=None,
                           **kwargs):
    _reject("gated_delta_rule", cp_context=cp_context, gk=gk, gv=gv)
    out_dtype = v.dtype
    if use_qk_l2norm_in_kernel:
        q, k = l2norm(q), l2norm(k)
    if use_gate_in_kernel:
        g = gdn_gate(g, A_log, dt_bias)
    if use_beta_sigmoid_in_kernel:
        beta = beta.to(_work_dtype(beta)).sigmoid() * (2.0 if allow_neg_eigval else 1.0)
    H, HV = q.shape[2], v.shape[2]
    if HV != H:  # grouped value attention: value head hv reads query/key head hv // (HV // H)
        q, k = (x.repeat_interleave(HV // H, dim=2) for x in (q, k))
    scale = q.shape[-1] ** -0.5 if scale is None else scale
    o, final = _over_sequences(_gdn_dense, cu_seqlens, initial_state, output_final_state, (q, k, v, g, beta),
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


# --- short causal convolution; the cache holds the last W inputs, newest last ------------------------------

def _activate(y: torch.Tensor, activation: str | None) -> torch.Tensor:
    if activation in ("swish", "silu"):
        return F.silu(y)
    if activation is None:
        return y
    raise NotImplementedError(f"ccq-eval's CPU backend: unsupported convolution activation {activation!r}")


def _conv_dense(x, weight, bias, residual, initial_state=None, output_final_state=False, activation=None):
    B, T, D = x.shape
    W = weight.shape[-1]
    f = _work_dtype(x)
    history = initial_state.to(f) if initial_state is not None else x.new_zeros(B, D, W, dtype=f)
    full = torch.cat([history, x.to(f).transpose(1, 2)], dim=-1)  # [B, D, W + T]
    # W shifted multiply-adds: for a width-4 depthwise filter this is far faster than conv1d with
    # groups=D on CPU, whose backward dominated a training step
    w = weight.to(f)
    y = sum(full[..., 1 + i : 1 + i + T] * w[:, i : i + 1] for i in range(W))
    if bias is not None:
        y = y + bias.to(f).unsqueeze(-1)
    y = _activate(y.transpose(1, 2), activation)
    if residual is not None:
        y = y + residual.to(f)
    final = full[..., -W:].to(x.dtype).contiguous() if output_final_state else None
    return y.to(x.dtype), final


def causal_conv1d(x, weight=None, bias=None, residual=None, initial_state=None, output_final_state=False,
                  activation=None, backend=None, cu_seqlens=None, cu_seqlens_cpu=None, chunk_indices=None,
                  cp_context=None, **kwargs):
    _reject("causal_conv1d", cp_context=cp_context)
    if weight is None:
        raise NotImplementedError("ccq-eval's CPU backend: causal_conv1d without weight")
    if cu_seqlens is None:
        return _conv_dense(x, weight, bias, residual, initial_state, output_final_state, activation)
    bounds = cu_seqlens.tolist()
    outs, finals = [], []
    for i, (start, end) in enumerate(zip(bounds[:-1], bounds[1:])):
        h0 = initial_state[i : i + 1] if initial_state is not None else None
        r = residual[:, start:end] if residual is not None else None
        y, ht = _conv_dense(x[:, start:end], weight, bias, r, h0, output_final_state, activation)
        outs.append(y)
        finals.append(ht)
    return torch.cat(outs, dim=1), (torch.cat(finals) if output_final_state else None)


def causal_conv1d_update(x, cache, residual=None, weight=None, bias=None, activation=None):
    """One token per sequence; shifts ``cache [N, D, W]`` in place, as fla's kernel does."""
    shape = x.shape
    x2 = x.reshape(-1, cache.shape[1])  # [N, D]
    cache.copy_(torch.cat([cache[..., 1:], x2.to(cache.dtype).unsqueeze(-1)], dim=-1))
    f = _work_dtype(x)
    y = (cache.to(f) * weight.to(f)).sum(-1)
    if bias is not None:
        y = y + bias.to(f)
    y = _activate(y, activation)
    if residual is not None:
        y = y + residual.reshape(y.shape).to(f)
    return y.to(x.dtype).view(shape), cache


# --- norms, activations, loss ---------------------------------------------------------------------------

def _rms(x: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps)


def _rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32):
    """RMSNorm in the working precision (as fla's kernel: fp32 math, one rounding at the end)."""
    xf = x.to(_work_dtype(x))
    if residual is not None:
        xf = xf + residual.to(xf.dtype)
        res_out = xf.to(residual.dtype)
    else:
        res_out = xf if residual_in_fp32 else x
    y = _rms(xf, eps)
    if weight is not None:
        y = y * weight.to(y.dtype)
    if bias is not None:
        y = y + bias.to(y.dtype)
    return y, res_out


def rms_norm(x, weight, bias, residual=None, eps=1e-5, prenorm=False, residual_in_fp32=False):
    y, res_out = _rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32)
    y = y.to(x.dtype)
    return (y, res_out) if prenorm else y


def rms_norm_gated(x, g, weight, bias, activation="swish", residual=None, prenorm=False, residual_in_fp32=False,
                   eps=1e-6):
    y, res_out = _rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32)
    gf = g.to(y.dtype)
    gate = gf * torch.sigmoid(gf) if activation in ("swish", "silu") else torch.sigmoid(gf)
    out = (y * gate).to(x.dtype)
    return (out, res_out) if prenorm else out


def swish(x):
    return F.silu(x)


def sigmoid(x):
    return torch.sigmoid(x)


def swiglu(x, y):
    return (F.silu(x.float()) * y.float()).to(x.dtype)


def swiglu_linear(x, y, weight, bias):
    return F.linear(swiglu(x, y), weight, bias)


def fused_cross_entropy_forward(self, input, target):
    """FusedCrossEntropyLoss.forward: logit scale, softcap, label smoothing and z-loss as fla defines them."""
    _reject("FusedCrossEntropyLoss", process_group=self.process_group)
    logits = input.float() * self.logit_scale
    if self.logit_softcapping is not None:
        logits = self.logit_softcapping * torch.tanh(logits / self.logit_softcapping)
    keep = target != self.ignore_index
    safe_target = target.masked_fill(~keep, 0)
    lse = torch.logsumexp(logits, dim=-1)
    picked = logits.gather(-1, safe_target.unsqueeze(-1)).squeeze(-1)
    ls = self.label_smoothing
    loss = lse - (1 - ls) * picked - ls * logits.mean(-1)
    z_loss = self.lse_square_scale * lse.square()
    loss = (loss + z_loss) * keep
    z_loss = z_loss * keep
    if self.reduction != "none":
        loss, z_loss = loss.sum(), z_loss.sum()
        if self.reduction == "mean":
            total = keep.sum()
            loss, z_loss = loss / total, z_loss / total
    return (loss, z_loss) if self.return_z_loss else loss


def fused_linear_cross_entropy_forward(self, x, target, weight, bias=None):
    _reject("FusedLinearCrossEntropyLoss", process_group=self.process_group, use_l2warp=self.use_l2warp)
    logits = F.linear(x, weight, bias).float().view(-1, weight.shape[0]) * self.logit_scale
    if self.logit_softcapping is not None:
        logits = self.logit_softcapping * torch.tanh(logits / self.logit_softcapping)
    return F.cross_entropy(logits, target.reshape(-1), ignore_index=self.ignore_index,
                           label_smoothing=self.label_smoothing, reduction=self.reduction)


# --- softmax attention (flash-attn's API) and rotary embeddings -------------------------------------------

def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1), **kwargs):
    """``q [B, Tq, H, D]``, ``k, v [B, Tk, Hkv, D]``; causal is aligned bottom-right, as flash-attn does."""
    if dropout_p:
        raise NotImplementedError("ccq-eval's CPU backend: attention dropout")
    B, Tq, H, D = q.shape
    Tk, Hkv = k.shape[1], k.shape[2]
    if Hkv != H:
        k, v = (x.repeat_interleave(H // Hkv, dim=2) for x in (k, v))
    f, dtype = _work_dtype(q), q.dtype
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


def rotary_embedding(x, cos, sin, interleaved=False, inplace=False, seqlen_offsets=0, cu_seqlens=None,
                     chunk_indices=None):
    """Rotate ``x [B, T, H, D]`` at positions t + offset (restarting per packed sequence)."""
    B, T = x.shape[:2]
    device = x.device
    if cu_seqlens is not None:
        bounds = cu_seqlens.to(device)
        seq_of = torch.searchsorted(bounds[1:], torch.arange(T, device=device), right=True)
        pos = (torch.arange(T, device=device) - bounds[seq_of]).unsqueeze(0)
        offsets = seqlen_offsets[seq_of].unsqueeze(0) if torch.is_tensor(seqlen_offsets) else seqlen_offsets
    else:
        pos = torch.arange(T, device=device).unsqueeze(0).expand(B, T)
        offsets = seqlen_offsets.view(B, 1) if torch.is_tensor(seqlen_offsets) else seqlen_offsets
    pos = (pos + offsets).long()
    f = _work_dtype(x)
    c, s = cos.to(f)[pos].unsqueeze(2), sin.to(f)[pos].unsqueeze(2)  # [B, T, 1, R/2]
    R = 2 * cos.shape[-1]
    xr = x[..., :R].to(f)
    if interleaved:
        x1, x2 = xr[..., 0::2], xr[..., 1::2]
        rotated = torch.stack((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1).flatten(-2)
    else:
        x1, x2 = xr.chunk(2, dim=-1)
        rotated = torch.cat((x1 * c - x2 * s, x2 * c + x1 * s), dim=-1)
    out = torch.cat((rotated.to(x.dtype), x[..., R:]), dim=-1)
    if inplace:
        x.copy_(out)
        return x
    return out
