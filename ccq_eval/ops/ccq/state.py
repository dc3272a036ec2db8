"""CCQ's state and the definitions every form of the operator shares: the running key statistics (``CCQState``), how
they are read or zeroed, the Sigma scales, the precision bounds, and the read ``q - lam Sigma_t q`` from running sums.

q'_t = (I - lam_t * Sigma_t) q_t, Sigma_t the running covariance of the keys. The forms, as fla keeps an operator's:
chunk.py (whole sequences, chunked), packed.py (packed sequences as one computation), step.py (one decoding token,
a Triton kernel where Triton runs), naive.py (the definition, per position, in float64).

Numerics: the raw-moment form ``Cbar_t - mu_t mu_t^T`` cancels catastrophically when keys share a large mean. Sigma
is shift-invariant, so the fast forms work on keys shifted by a fixed centre (the carried mean, or the mean of the
first chunk), which keeps every accumulated term O(spread)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

SIGMA_SCALES = ("none", "trace")
TRACE_EPS = 1e-6
BLOCK_TOKENS = 2048  # a multiple of every chunk size used; bounds the operator's working memory


@dataclass
class CCQState:
    """Running key statistics of one layer, per sequence and head; constant size in T.

    count: ``[N]`` int64, keys seen so far per sequence.
    mean:  ``[N, H, D]``, running key mean mu_t.
    cov:   ``[N, H, D, D]``, running key covariance Sigma_t (centred second moment / count).
    mean/cov are float32, or float64 when the inputs are float64.
    """

    count: torch.Tensor
    mean: torch.Tensor
    cov: torch.Tensor

    def select(self, index: int | slice) -> "CCQState":
        if isinstance(index, int):
            index = slice(index, index + 1)
        return CCQState(self.count[index], self.mean[index], self.cov[index])

    @staticmethod
    def cat(states: list["CCQState"]) -> "CCQState":
        return CCQState(
            torch.cat([s.count for s in states]),
            torch.cat([s.mean for s in states]),
            torch.cat([s.cov for s in states]),
        )


@dataclass(frozen=True)
class ReadGate:
    """Where a read's lam comes from: the gate, ``lam = sigmoid(q . weight_h + bias_h)`` per head and token
    (``weight [H, D]``, ``bias [H]``), or one fixed value for every head and token (training-free CCQ)."""

    weight: torch.Tensor | None = None
    bias: torch.Tensor | None = None
    fixed: float | None = None

    def lam(self, q: torch.Tensor) -> torch.Tensor:
        """``q [..., H, D]`` -> lam ``[..., H]``, float32 (float64 for float64 queries: a float64 gradient check)."""
        f = stat_dtype(q)
        if self.weight is None:
            return torch.full(q.shape[:-1], float(self.fixed), dtype=f, device=q.device)
        return torch.sigmoid((q.to(f) * self.weight.to(f)).sum(-1) + self.bias.to(f))


def stat_dtype(x: torch.Tensor) -> torch.dtype:
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def statistics(state: CCQState | None, n: int, H: int, D: int, f: torch.dtype, device) -> tuple:
    """(count, mean, cov) of ``state`` in ``f``: the very tensors where they already are in it (a decoding step
    updates Sigma in place), zeros for ``n`` sequences that have seen no key where there is no state."""
    if state is None:
        return (torch.zeros(n, dtype=f, device=device), torch.zeros(n, H, D, dtype=f, device=device),
                torch.zeros(n, H, D, D, dtype=f, device=device))
    return state.count.to(f), state.mean.to(f), state.cov.to(f)


def check_sigma_scale(sigma_scale: str) -> None:
    if sigma_scale not in SIGMA_SCALES:
        raise ValueError(f"sigma_scale must be one of {SIGMA_SCALES}, got {sigma_scale!r}")


def apply_trace_scale(sigma_q: torch.Tensor, trace: torch.Tensor) -> torch.Tensor:
    # 'trace': Sigma / (tr Sigma + eps) keeps |Sigma q| <= |q|, whatever the scale of the keys.
    return sigma_q / (trace.clamp_min(0) + TRACE_EPS).unsqueeze(-1)


FP32_BOUND = 1e-4  # relative error against the float64 definition that fp32 inputs must meet
BF16_BOUND = 2.0 ** -7  # bfloat16 inputs: the contracted query's own rounding (2^-8) and as much again for its sums


def contracted_read(qf, lam, key_sum, second_q, sq_norm, n_t, sigma_scale) -> torch.Tensor:
    """q - lam Sigma_t q from the running sums, in two passes over [B, T, H, D] (the per-token scalars are folded
    into one small factor): Sigma_t q = (second_q - key_sum (key_sum . q) / n) / n."""
    dot = (key_sum * qf).sum(-1, keepdim=True)
    raw = torch.addcmul(second_q, key_sum, dot / n_t, value=-1)  # n Sigma_t q
    # one key has zero covariance exactly; keep rounding noise from being divided by a zero trace
    factor = lam.to(qf.dtype).unsqueeze(-1) * (n_t > 1) / n_t
    if sigma_scale == "trace":
        trace = sq_norm / n_t[..., 0] - (key_sum * key_sum).sum(-1) / n_t[..., 0] ** 2
        factor = factor / (trace.clamp_min(0) + TRACE_EPS).unsqueeze(-1)
    return torch.addcmul(qf, raw, factor, value=-1)
