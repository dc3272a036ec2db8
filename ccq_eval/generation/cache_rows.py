"""Rows of a model's cache: keep some, copy some, join two caches of independent rows.

fla's caches (``fla.models.cache_utils.Cache``: per layer a dict of recurrent, convolution, attention and CCQ states,
batch first) and transformers' ``DynamicCache`` both select rows in place (``batch_select_indices``). Joining is for
recurrent caches only, whose rows hold no positions: their states are concatenated along the batch."""

from __future__ import annotations

import copy
from dataclasses import fields, is_dataclass

import torch


def keep_rows(cache, rows: list[int]) -> None:
    """Keep these rows of the cache, in this order (in place)."""
    cache.batch_select_indices(torch.tensor(rows, dtype=torch.long))


def copy_rows(cache, rows: list[int]):
    """A new cache holding copies of these rows; the original is untouched."""
    copied = copy.deepcopy(cache)
    keep_rows(copied, rows)
    return copied


def _join(a, b):
    if isinstance(a, torch.Tensor):
        return torch.cat([a, b])
    if isinstance(a, dict):
        return {key: _join(a[key], b[key]) for key in a}
    if isinstance(a, (tuple, list)):
        return type(a)(_join(x, y) for x, y in zip(a, b, strict=True))
    if is_dataclass(a):  # CCQ's running key statistics
        return type(a)(**{f.name: _join(getattr(a, f.name), getattr(b, f.name)) for f in fields(a)})
    if a is None and b is None:
        return None
    raise TypeError(f"cannot join cache states of type {type(a).__name__} and {type(b).__name__}")


def join_rows(cache, more) -> None:
    """Append the rows of ``more`` (an fla cache of the same model) to ``cache``, in place."""
    for layer, other in zip(cache.layers, more.layers, strict=True):
        layer.state = _join(layer.state, other.state)
