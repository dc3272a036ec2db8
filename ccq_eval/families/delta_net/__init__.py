"""DeltaNet (fla's ``delta_net``) and training-free CCQ on it, ``ccq_delta_net`` (models/ccq_models/delta_net.py); its read on a CPU is
ops/delta_net/cpu.py (its q/k/v convolutions are the shared ShortConvolution)."""

from __future__ import annotations

from ccq_eval.families.base import Family, Patch

OPS = "ccq_eval.ops.delta_net.cpu"

FAMILY = Family(
    cache_layout="packed", cached_chunks=True,
    model_type="delta_net", name="DeltaNet", cpu=True, ccq="ccq_delta_net", ccq_name="CCQ-DeltaNet",
    ccq_models="ccq_eval.models.ccq_models.delta_net", training_free=True,
    gpu_note="fla's kernels; float32 refused (fla's chunk_delta_rule asserts), use bf16",
    cuda_refuses_fp32="fla's chunk_delta_rule",
    patches=(Patch("fla.layers.delta_net", "chunk_delta_rule", f"{OPS}:chunk_delta_rule"),
             Patch("fla.layers.delta_net", "fused_recurrent_delta_rule", f"{OPS}:fused_recurrent_delta_rule")),
    in_place_steps=(Patch("fla.layers.delta_net", "fused_recurrent_delta_rule",
                          "ccq_eval.ops.delta_net.fused_recurrent:fused_recurrent_delta_rule_in_place"),),
)
