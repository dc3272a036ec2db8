"""DeltaNet's decoding step with its state written where it lies: the delta rule is the gated delta rule with no decay
(ops/gated_deltanet/fused_recurrent.py), on fla's K-first state ``[B, H, K, V]``. A call it does not take returns None and
goes on to fla's function."""

from __future__ import annotations

import torch

from ccq_eval.ops.gated_deltanet.fused_recurrent import delta_step_in_place
from ccq_eval.ops.in_place import takes_in_place


def fused_recurrent_delta_rule_in_place(q=None, k=None, v=None, beta=None, scale=None, initial_state=None,
                                        output_final_state=False, use_qk_l2norm_in_kernel=False, cu_seqlens=None,
                                        **kwargs):
    """fla's ``fused_recurrent_delta_rule`` for one token a row, the state updated in place: ``(o, initial_state)``;
    None where it does not apply (a per-channel beta among them)."""
    if kwargs or (beta is not None and beta.dim() != 3):
        return None
    if not takes_in_place(q, v, initial_state, output_final_state, cu_seqlens, v_first=False):
        return None
    if beta is None:
        beta = torch.ones(v.shape[:3], dtype=torch.float32, device=v.device)
    return delta_step_in_place(q, k, v, None, beta, initial_state, scale, l2=use_qk_l2norm_in_kernel,
                               v_first=False), initial_state
