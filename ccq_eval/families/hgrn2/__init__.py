"""HGRN2 (fla's ``hgrn2``) and training-free CCQ on it, ``ccq_hgrn2`` (models/ccq_models/hgrn2.py). Its read is GLA's under its own
names; its query activation and fused output norm + projection run on a CPU through ops/hgrn2/cpu.py."""

from __future__ import annotations

from ccq_eval.families.base import Family, Patch

GLA_OPS = "ccq_eval.ops.gla.cpu"

FAMILY = Family(
    cache_layout="packed", cached_chunks=True,
    model_type="hgrn2", name="HGRN2", cpu=True, ccq="ccq_hgrn2", ccq_name="CCQ-HGRN2",
    ccq_models="ccq_eval.models.ccq_models.hgrn2", training_free=True, doc_note="CCQ reads the key `1 - f_t`",
    patches=(Patch("fla.layers.hgrn2", "chunk_gla", f"{GLA_OPS}:chunk_gla"),
             Patch("fla.layers.hgrn2", "fused_recurrent_gla", f"{GLA_OPS}:fused_recurrent_gla"),
             Patch("fla.layers.hgrn2", "fused_chunk_gla", f"{GLA_OPS}:fused_chunk_gla"),
             Patch("fla.layers.hgrn2", "swish", "ccq_eval.ops.shared_cpu_forms:swish"),
             Patch("fla.layers.hgrn2", "rms_norm_linear", "ccq_eval.ops.hgrn2.cpu:rms_norm_linear")),
    in_place_steps=(Patch("fla.layers.hgrn2", "fused_recurrent_gla",
                          "ccq_eval.ops.gla.fused_recurrent:fused_recurrent_gla_in_place"),),
)
