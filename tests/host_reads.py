"""Host reads a GPU would wait for, counted on any device: ``aten._local_scalar_dense`` (what ``.item()``, ``int(t)``
and ``bool(t)`` become) under a TorchDispatchMode, and calls of ``Tensor.tolist`` (which never dispatches)."""

from __future__ import annotations

import contextlib
import traceback

import torch
from torch.utils._python_dispatch import TorchDispatchMode


class _ScalarReads(TorchDispatchMode):
    def __init__(self, found: list[str]):
        super().__init__()
        self.found = found

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func is torch.ops.aten._local_scalar_dense.default:
            self.found.append("".join(traceback.format_stack(limit=8)[:-1]))
        return func(*args, **(kwargs or {}))


@contextlib.contextmanager
def host_reads():
    """Yields a list that fills with the stack of every host read inside the block."""
    found: list[str] = []
    original = torch.Tensor.tolist

    def tolist(tensor, *args):
        found.append("".join(traceback.format_stack(limit=8)[:-1]))
        return original(tensor, *args)

    torch.Tensor.tolist = tolist
    try:
        with _ScalarReads(found):
            yield found
    finally:
        torch.Tensor.tolist = original
