"""Torch implementations of the Triton-only functions every fla family's layers share (short convolution, norms,
activations, losses, rotary embeddings, l2norm), with fla's signatures, and the helpers the families' own ops
(``ccq_eval/ops/<family>/cpu.py``) are built on.

Why by hand: fla ships no CPU path (its kernels are Triton) and its ``naive.py`` references loop over
every token, have no ``cu_seqlens`` / V-first state support, and are too slow for 20K-token
evaluation. These are chunked and vectorised; ``cpu_forms`` installs them, and each one is tested
against an independent per-position recurrence or direct formula in ``tests/models/test_cpu_backend.py``.
Arguments fla accepts but a CPU run never needs (context parallelism, reverse scans) raise.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F



def work_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def reject(name: str, **unsupported) -> None:
    for arg, value in unsupported.items():
        if value is not None and value is not False:
            raise NotImplementedError(f"ccq-eval's CPU backend does not implement {name}({arg}=...)")


def over_sequences(dense_fn, cu_seqlens, initial_state, output_final_state, tensors, **kwargs):
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


def to_chunks(x: torch.Tensor, chunk: int) -> torch.Tensor:
    """``[B, T, H, ...]`` (T a multiple of chunk) -> ``[B, H, NC, C, ...]``."""
    B, T, H = x.shape[:3]
    x = x.reshape(B, T // chunk, chunk, H, *x.shape[3:])
    return x.movedim(3, 1)


def from_chunks(x: torch.Tensor, T: int) -> torch.Tensor:
    B, H, NC, C = x.shape[:4]
    return x.movedim(1, 3).reshape(B, NC * C, H, *x.shape[4:])[:, :T]


def pad_time(x: torch.Tensor, pad: int) -> torch.Tensor:
    if not pad:
        return x
    widths = [0, 0] * (x.dim() - 2) + [0, pad]
    return F.pad(x, widths)


# --- l2norm (the delta rules' q/k; CCQ's read hook) --------------------------------------------------------

def l2norm(x: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """fla's l2norm: x / sqrt(sum x^2 + eps), computed in float32 (or float64)."""
    xf = x.to(work_dtype(x))
    return xf * torch.rsqrt((xf * xf).sum(-1, keepdim=True) + eps)




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
    f = work_dtype(x)
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
    reject("causal_conv1d", cp_context=cp_context)
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
    f = work_dtype(x)
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


def rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32):
    """RMSNorm in the working precision (as fla's kernel: fp32 math, one rounding at the end)."""
    xf = x.to(work_dtype(x))
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
    y, res_out = rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32)
    y = y.to(x.dtype)
    return (y, res_out) if prenorm else y


def rms_norm_gated(x, g, weight, bias, activation="swish", residual=None, prenorm=False, residual_in_fp32=False,
                   eps=1e-6):
    y, res_out = rms_norm_work(x, weight, bias, residual, eps, residual_in_fp32)
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
    reject("FusedCrossEntropyLoss", process_group=self.process_group)
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
    reject("FusedLinearCrossEntropyLoss", process_group=self.process_group, use_l2warp=self.use_l2warp)
    logits = F.linear(x, weight, bias).float().view(-1, weight.shape[0]) * self.logit_scale
    if self.logit_softcapping is not None:
        logits = self.logit_softcapping * torch.tanh(logits / self.logit_softcapping)
    return F.cross_entropy(logits, target.reshape(-1), ignore_index=self.ignore_index,
                           label_smoothing=self.label_smoothing, reduction=self.reduction)


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
    f = work_dtype(x)
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
