"""What CCQ adds to one decoding step and to a packed prefill of a layer, counted as a GPU launches it: each Triton kernel the interpreter runs
(fla's and ccq-eval's, real), and each torch op outside them that is not a view or an allocation; the step as the
engine's fixed slots run it (the backbone's state written in place, every other new state tensor copied home). CCQ's
step is one kernel a layer with Gated DeltaNet's norms, the gate and the count folded in: with the copies home of its
mean and count, at most 3 launches more than the backbone's step; its packed read is one pass, at most 12 launches
more than the backbone's prefill (benchmarks/ccq_profile.py prices them)."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import sys
from pathlib import Path

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from ccq_eval.ops import trust
from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu

ROOT = Path(__file__).resolve().parents[2]
MOST_ADDED = 3  # CCQ's step kernel, and the copies home of its new mean and count
MOST_ADDED_TO_PREFILL = 12


def views() -> set[str]:
    """benchmarks/ccq_profile.py's ops that launch nothing (views and allocations): the ledger's own rule."""
    spec = importlib.util.spec_from_file_location("ccq_profile", ROOT / "benchmarks" / "ccq_profile.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("ccq_profile", module)
    spec.loader.exec_module(module)
    return module.VIEWS


class Launches(TorchDispatchMode):
    """The names of the launches a GPU would make under it: Triton kernels, and torch ops outside them."""

    def __init__(self, skipped: set[str]):
        super().__init__()
        self.names: list[str] = []
        self.skipped, self.inside = skipped, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        name = func._overloadpacket.__name__
        if not self.inside and name not in self.skipped:
            self.names.append(name)
        return func(*args, **(kwargs or {}))

    @contextlib.contextmanager
    def triton_kernels(self):
        from triton.runtime import interpreter

        original = interpreter.InterpretedFunction.run

        def run(fn, *args, **kwargs):  # one launch; the interpreter's own tensor work inside it is not the GPU's
            self.names.append(getattr(fn.fn, "__name__", "triton kernel"))
            self.inside += 1
            try:
                return original(fn, *args, **kwargs)
            finally:
                self.inside -= 1

        interpreter.InterpretedFunction.run = run
        try:
            yield
        finally:
            interpreter.InterpretedFunction.run = original


def layers(family: str):
    """(backbone layer, CCQ layer) of a small shape, the same weights."""
    from ccq_eval.models.ccq_read import CCQSettings, attach_ccq

    torch.manual_seed(0)
    if family == "gla":
        from fla.layers.gla import GatedLinearAttention

        from ccq_eval.models.ccq_models.gla import CCQGatedLinearAttention as ccq_class

        base = GatedLinearAttention(hidden_size=64, num_heads=2, layer_idx=0)
    else:
        from fla.layers.gated_deltanet import GatedDeltaNet

        from ccq_eval.models.ccq_models.gated_deltanet import CCQGatedDeltaNet as ccq_class

        base = GatedDeltaNet(hidden_size=64, num_heads=2, head_dim=32, layer_idx=0)
    base = base.eval()
    ccq = attach_ccq(copy.deepcopy(base), ccq_class, base.num_heads, base.head_k_dim, CCQSettings())
    return base, ccq.eval()


def step_launches(layer, family: str, skipped: set[str], rows: int = 3) -> list[str]:
    """The launches of one decoding step at ``rows`` rows after a short prefill, as the fixed slots run it."""
    from fla.models.cache_utils import Cache

    from ccq_eval.families import backbone
    from ccq_eval.generation.cache_rows import cache_leaves
    from ccq_eval.ops.in_place import routes_written_in_place

    cache = Cache()
    with torch.no_grad(), fla_kernels_on_cpu():
        layer(torch.randn(rows, 8, 64), past_key_values=cache, use_cache=True)
    buffers = cache_leaves(cache)
    x = torch.randn(rows, 1, 64)
    book = Launches(skipped)
    with torch.no_grad(), fla_kernels_on_cpu(), routes_written_in_place(backbone(family).in_place_steps):
        with book.triton_kernels(), book:
            layer(x, past_key_values=cache, use_cache=True)
            for buffer, new in zip(buffers, cache_leaves(cache), strict=True):  # home, into the slots' buffers
                if new.data_ptr() != buffer.data_ptr():
                    buffer.copy_(new)
    return book.names


@pytest.mark.parametrize("family", ["gla", "gated_deltanet"])
def test_ccq_adds_at_most_three_launches_to_a_decoding_step(family, monkeypatch):
    monkeypatch.setattr(trust, "_MODE", "own")  # the kernels' own launches, without the first use's check
    skipped = views()
    base, ccq = layers(family)
    backbone_names, ccq_names = (step_launches(layer, family, skipped) for layer in (base, ccq))
    added = len(ccq_names) - len(backbone_names)
    assert ccq_names.count("_ccq_step_kernel") == 1, ccq_names
    assert 1 <= added <= MOST_ADDED, (added, sorted(set(ccq_names) - set(backbone_names)), ccq_names, backbone_names)


def prefill_launches(layer, skipped: set[str], lengths=(5, 40, 19)) -> list[str]:
    """The launches of a packed prefill (the prompts in one row, cu_seqlens) that keeps its states in a cache."""
    from fla.models.cache_utils import Cache

    cu = torch.nn.functional.pad(torch.tensor(lengths).cumsum(0), (1, 0)).to(torch.int32)
    x = torch.randn(1, sum(lengths), 64)
    book = Launches(skipped)
    with torch.no_grad(), fla_kernels_on_cpu(), book.triton_kernels(), book:
        layer(x, past_key_values=Cache(), use_cache=True, cu_seqlens=cu)
    return book.names


@pytest.mark.parametrize("family", ["gla", "gated_deltanet"])
def test_ccq_adds_at_most_twelve_launches_to_a_packed_prefill(family, monkeypatch):
    """CCQ's read of a packed prefill is one pass (the norms, the gate, the statistics, the read and the final
    statistics in one kernel): the composition over chunk slots it replaces added about 290 a layer."""
    monkeypatch.setattr(trust, "_MODE", "own")
    skipped = views()
    base, ccq = layers(family)
    backbone_names, ccq_names = (prefill_launches(layer, skipped) for layer in (base, ccq))
    added = len(ccq_names) - len(backbone_names)
    assert ccq_names.count("_ccq_fused_chunk_kernel") == 1, ccq_names
    assert 1 <= added <= MOST_ADDED_TO_PREFILL, (added, ccq_names, backbone_names)
