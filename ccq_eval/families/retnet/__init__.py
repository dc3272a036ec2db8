"""RetNet (fla's ``retnet``) and training-free CCQ on it, ``ccq_retnet`` (models/ccq_models/retnet.py); multi-scale retention on a CPU,
every mode the layer can pick, is ops/retnet/cpu.py."""

from __future__ import annotations

from ccq_eval.families.base import Family, Patch

OPS = "ccq_eval.ops.retnet.cpu"
LAYER = "fla.layers.multiscale_retention"

FAMILY = Family(
    cache_layout="padded", cached_chunks=True,  # its rotations read positions
    model_type="retnet", name="RetNet", cpu=True, ccq="ccq_retnet", ccq_name="CCQ-RetNet",
    ccq_models="ccq_eval.models.ccq_models.retnet", training_free=True, doc_note="CCQ reads the keys after the rotary embedding",
    patches=tuple(Patch(LAYER, name, f"{OPS}:{name}") for name in
                  ("chunk_retention", "fused_chunk_retention", "fused_recurrent_retention", "parallel_retention")),
)
