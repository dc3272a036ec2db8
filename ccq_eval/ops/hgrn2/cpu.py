"""HGRN2 on a CPU: its read is GLA's with the state V-first (ops/gla/cpu.py); its output norm fused with the
projection is here."""

from __future__ import annotations

import torch.nn.functional as F

from ccq_eval.ops.shared_cpu_forms import rms_norm_work

def rms_norm_linear(x, norm_weight, norm_bias, linear_weight, linear_bias, residual=None, eps=1e-5, prenorm=False,
                    residual_in_fp32=False):
    """HGRN2's output: RMSNorm, then the output projection (fla's kernel fuses the two)."""
    y, res_out = rms_norm_work(x, norm_weight, norm_bias, residual, eps, residual_in_fp32)
    out = F.linear(y.to(x.dtype).to(linear_weight.dtype), linear_weight, linear_bias)
    return (out, res_out) if prenorm else out
