"""What the CCQ model families share: the config fields, the gate, and the read-side module that
turns (q, k, cached statistics) into the contracted query for one layer."""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn

from ccq_eval.ops.ccq import SIGMA_SCALES, CCQState
from ccq_eval.ops.ccq.read import contract_read
from ccq_eval.ops.ccq.state import ReadGate
from ccq_eval.ops.ccq.step import contract_read_step

CCQ_WEIGHTINGS = ("uniform",)
# The paper leaves the gate's initial bias open. -2 starts lam near 0.12: close to the backbone,
# far enough from 0 that the gate gets a useful gradient. Recorded with every result via the config.
DEFAULT_GATE_BIAS = -2.0


@dataclass(frozen=True)
class CCQSettings:
    """The CCQ config fields (also written into the model's config.json)."""

    use_ccq: bool = True
    ccq_gate_bias_init: float = DEFAULT_GATE_BIAS
    ccq_weighting: str = "uniform"
    ccq_fixed_lambda: float | None = None
    ccq_sigma_scale: str = "none"

    def __post_init__(self):
        if self.ccq_weighting not in CCQ_WEIGHTINGS:
            raise ValueError(f"ccq_weighting={self.ccq_weighting!r} is not implemented; supported: {CCQ_WEIGHTINGS}")
        if self.ccq_sigma_scale not in SIGMA_SCALES:
            raise ValueError(f"ccq_sigma_scale={self.ccq_sigma_scale!r}; expected one of {SIGMA_SCALES}")
        if self.ccq_fixed_lambda is not None and not math.isfinite(float(self.ccq_fixed_lambda)):
            raise ValueError(f"ccq_fixed_lambda must be a finite number or None, got {self.ccq_fixed_lambda!r}")

    @classmethod
    def from_config(cls, config) -> "CCQSettings":
        return cls(**{name: getattr(config, name) for name in cls.__dataclass_fields__})


def set_ccq_fields(config, kwargs: dict) -> None:
    """Take the CCQ fields out of a config's kwargs (defaults where absent), validate them and store
    them on the config; what is left of kwargs goes to the backbone's config."""
    fields = {name: kwargs.pop(name) for name in CCQSettings.__dataclass_fields__ if name in kwargs}
    settings = CCQSettings(**fields)
    for name in CCQSettings.__dataclass_fields__:
        setattr(config, name, getattr(settings, name))


class CCQGate(nn.Module):
    """lam_t = sigmoid(w_h^T q_t + b_h): one scalar per head and token."""

    def __init__(self, num_heads: int, head_dim: int, bias_init: float):
        super().__init__()
        self.bias_init = bias_init
        self.weight = nn.Parameter(torch.empty(num_heads, head_dim))
        self.bias = nn.Parameter(torch.empty(num_heads))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        with torch.no_grad():
            self.weight.zero_()
            self.bias.fill_(self.bias_init)

    def forward(self, q: torch.Tensor) -> torch.Tensor:
        return ReadGate(self.weight, self.bias).lam(q)


class CCQRead(nn.Module):
    """The read-side correction of one layer: q -> (I - lam Sigma_t) q, statistics carried in the cache."""

    def __init__(self, num_heads: int, head_dim: int, settings: CCQSettings):
        super().__init__()
        self.fixed_lambda = settings.ccq_fixed_lambda
        self.sigma_scale = settings.ccq_sigma_scale
        self.gate = CCQGate(num_heads, head_dim, settings.ccq_gate_bias_init) if self.fixed_lambda is None else None

    @property
    def read_gate(self) -> ReadGate:
        if self.gate is None:
            return ReadGate(fixed=float(self.fixed_lambda))
        return ReadGate(self.gate.weight, self.gate.bias)

    def lam(self, q: torch.Tensor) -> torch.Tensor:
        return self.read_gate.lam(q)

    def forward(self, q, k, state: CCQState | None, output_final_state: bool, cu_seqlens=None,
                normalize: bool = False, read_dtype: torch.dtype | None = None):
        """``(q', k as the read takes it, statistics)``. ``normalize``: q and k L2-normalised first, in ``read_dtype``
        (a Gated DeltaNet read that would normalise them in its kernel)."""
        read_dtype = read_dtype or q.dtype
        if state is not None and _one_token_per_sequence(q, cu_seqlens):
            # decoding: the norms, the gate and the O(H D^2) Welford update in one step (one kernel on a GPU)
            packed = cu_seqlens is not None
            q1, k1 = (x.transpose(0, 1) if packed else x for x in (q, k))
            q_clean, k_read, new_state = contract_read_step(q1, k1, self.read_gate, state, self.sigma_scale,
                                                            normalize, read_dtype)
            return *((x.transpose(0, 1) if packed else x) for x in (q_clean, k_read)), new_state
        # prefill: the norms, the gate, the statistics and the read in one pass (one launch on a GPU)
        return contract_read(q, k, self.read_gate, state, output_final_state, cu_seqlens=cu_seqlens,
                             sigma_scale=self.sigma_scale, normalize=normalize, read_dtype=read_dtype)


def _one_token_per_sequence(q: torch.Tensor, cu_seqlens) -> bool:
    """Decided by shapes, never by reading ``cu_seqlens`` back (a host sync in every layer): N packed sequences
    holding N tokens hold one each, as the lengths of what fla unpads (one token per row of a decoding step) and of
    the engine's prompts are never zero."""
    if cu_seqlens is None:
        return q.shape[1] == 1
    return q.shape[1] == cu_seqlens.shape[0] - 1


def split_cached_state(recurrent_state):
    """The layer cache holds (backbone state, CCQState) for a CCQ layer."""
    if recurrent_state is None:
        return None, None
    return recurrent_state


def attach_to_layers(model: nn.Module, backbone_layer: type, ccq_class: type, config,
                     head_dim_attribute: str = "head_k_dim") -> None:
    """Turn every backbone layer of a built fla model into its CCQ subclass (hybrid softmax-attention
    layers stay as they are); the layer's key head size is its ``head_dim_attribute``."""
    settings = CCQSettings.from_config(config)
    for block in model.layers:
        if isinstance(block.attn, backbone_layer):
            head_dim = getattr(block.attn, head_dim_attribute)
            attach_ccq(block.attn, ccq_class, block.attn.num_heads, head_dim, settings)


def attach_ccq(layer: nn.Module, ccq_class: type, num_heads: int, head_dim: int, settings: CCQSettings) -> nn.Module:
    """Turn a built fla layer into its CCQ subclass in place: same submodules and parameter names,
    plus ``ccq.gate`` — so a stock fla checkpoint loads, and nothing of the backbone is rebuilt."""
    layer.__class__ = ccq_class
    layer.use_ccq = settings.use_ccq
    if settings.use_ccq:
        layer.ccq = CCQRead(num_heads, head_dim, settings)
    return layer
