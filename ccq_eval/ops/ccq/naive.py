"""CCQ's read straight from its definition: for every t, Sigma_t from the keys so far, in float64. O(T^2 D^2); the
reference every other form is tested against."""

from __future__ import annotations

import torch

from ccq_eval.ops.ccq.state import TRACE_EPS, check_sigma_scale

def naive_contract_query(
    q: torch.Tensor,
    k: torch.Tensor,
    lam: torch.Tensor,
    sigma_scale: str = "none",
    prefix_keys: torch.Tensor | None = None,
) -> torch.Tensor:
    """Reference: for every t, Sigma_t from keys[:t+1] by the definition, in float64. O(T^2 D^2).

    prefix_keys ``[B, T0, H, D]``: keys seen before this sequence (what an initial state summarises).
    """
    check_sigma_scale(sigma_scale)
    q64, k64, lam64 = q.double(), k.double(), lam.double()
    if prefix_keys is not None:
        k_all = torch.cat([prefix_keys.double(), k64], dim=1)
        offset = prefix_keys.shape[1]
    else:
        k_all, offset = k64, 0
    out = torch.empty_like(q64)
    for t in range(q.shape[1]):
        keys = k_all[:, : offset + t + 1]  # [B, n, H, D]
        mu = keys.mean(dim=1, keepdim=True)
        centred = keys - mu
        sigma = torch.einsum("bnhi,bnhj->bhij", centred, centred) / keys.shape[1]
        sigma_q = torch.einsum("bhij,bhj->bhi", sigma, q64[:, t])
        if sigma_scale == "trace":
            sigma_q = sigma_q / (torch.diagonal(sigma, dim1=-2, dim2=-1).sum(-1) + TRACE_EPS).unsqueeze(-1)
        out[:, t] = q64[:, t] - lam64[:, t].unsqueeze(-1) * sigma_q
    return out
