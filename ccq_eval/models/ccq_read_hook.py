"""CCQ on an fla layer without copying its forward: for the duration of the layer's forward, the read
functions it calls (module-level names in its fla module, e.g. ``fla.layers.delta_net.chunk_delta_rule``)
are wrapped so the query entering the read is (I - lam Sigma_t) q, Sigma_t from the keys the same call
writes into the state. It is how CCQ attaches to every family whose read is ``o_t = S_t^T q_t`` with ``S_t``
accumulating ``k_t v_t^T``: the paper's GLA and Gated DeltaNet and the training-free DeltaNet, RetNet and HGRN2
(each family's classes in models/ccq_models/). An fla change to how a layer computes q and k is followed
without a line changed here.

The layer cache's recurrent_state becomes (backbone state, CCQState), as for GLA / GDN. Keys that the
kernel would L2-normalise (``use_qk_l2norm_in_kernel``) are normalised by CCQ first with fla's formula (in its
decoding step's one kernel, where it runs), so CCQ sees the keys that are written and the contracted query is read
without a second normalisation.
"""

from __future__ import annotations

import contextlib
import functools
from types import ModuleType

from ccq_eval.models.ccq_read import split_cached_state


def _contracting(layer, read):
    @functools.wraps(read)
    def contracted_read(*args, **kwargs):
        if args:  # fla's layers pass every read argument by keyword; a positional call would bypass CCQ
            raise TypeError(f"CCQ read hook: {read.__name__} called with positional arguments")
        normalize = bool(kwargs.get("use_qk_l2norm_in_kernel"))
        if normalize:  # CCQ normalises them (in its decoding kernel, where it runs): the read must not again
            kwargs["use_qk_l2norm_in_kernel"] = False
        state, ccq_state = split_cached_state(kwargs.get("initial_state"))
        keep = bool(kwargs.get("output_final_state"))
        q, k, ccq_state = layer.ccq(kwargs["q"], kwargs["k"], ccq_state, output_final_state=keep,
                                    cu_seqlens=kwargs.get("cu_seqlens"), normalize=normalize,
                                    read_dtype=kwargs["v"].dtype)
        if "initial_state" in kwargs:
            kwargs["initial_state"] = state
        o, final = read(**{**kwargs, "q": q, "k": k})
        return o, ((final, ccq_state) if keep else final)

    return contracted_read


@contextlib.contextmanager
def contracted_reads(layer, module: ModuleType, names: tuple[str, ...]):
    """Inside the block, each ``module.<name>`` read contracts its query with ``layer.ccq``."""
    originals = {name: getattr(module, name) for name in names}
    for name, read in originals.items():
        setattr(module, name, _contracting(layer, read))
    try:
        yield
    finally:
        for name, read in originals.items():
            setattr(module, name, read)


class HookedCCQLayer:
    """Mixin for an fla layer class: ``READ_MODULE`` and ``READS`` name the reads its forward calls."""

    READ_MODULE: ModuleType
    READS: tuple[str, ...]

    def forward(self, *args, **kwargs):
        if not self.use_ccq:
            return super().forward(*args, **kwargs)
        with contracted_reads(self, self.READ_MODULE, self.READS):
            return super().forward(*args, **kwargs)
