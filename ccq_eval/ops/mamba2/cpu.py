"""Mamba2's gated group RMSNorm on a CPU (its selective scan and convolution run fla's own torch fallback)."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ccq_eval.ops.shared_cpu_forms import work_dtype

def rmsnorm_fn(x, weight, bias, z=None, eps=1e-6, group_size=None, norm_before_gate=True):
    """Mamba2's gated RMSNorm, per group of ``group_size`` channels; the SiLU gate z before or after."""
    f = work_dtype(x)
    xf = x.to(f)
    gate = F.silu(z.to(f)) if z is not None else None
    if gate is not None and not norm_before_gate:
        xf = xf * gate
    size = group_size or x.shape[-1]
    groups = xf.unflatten(-1, (x.shape[-1] // size, size))
    y = (groups * torch.rsqrt(groups.square().mean(-1, keepdim=True) + eps)).flatten(-2) * weight.to(f)
    if bias is not None:
        y = y + bias.to(f)
    if gate is not None and norm_before_gate:
        y = y * gate
    return y.to(x.dtype)
