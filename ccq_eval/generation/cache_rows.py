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


def leaves(state) -> list[torch.Tensor]:
    """The tensors of one layer's cache state (fla: a dict of recurrent, convolution, attention and CCQ states), in a
    fixed order."""
    if isinstance(state, torch.Tensor):
        return [state]
    if isinstance(state, dict):
        return [t for key in state for t in leaves(state[key])]
    if isinstance(state, (tuple, list)):
        return [t for item in state for t in leaves(item)]
    if is_dataclass(state):  # CCQ's running key statistics
        return [t for f in fields(state) for t in leaves(getattr(state, f.name))]
    return []


def rebuild(state, tensors):
    """``state`` with its tensors replaced, in ``leaves`` order, from the iterator ``tensors``."""
    if isinstance(state, torch.Tensor):
        return next(tensors)
    if isinstance(state, dict):
        return {key: rebuild(state[key], tensors) for key in state}
    if isinstance(state, (tuple, list)):
        return type(state)(rebuild(item, tensors) for item in state)
    if is_dataclass(state):
        return type(state)(**{f.name: rebuild(getattr(state, f.name), tensors) for f in fields(state)})
    return state


def cache_leaves(cache) -> list[torch.Tensor]:
    """Every tensor of an fla cache, layer by layer."""
    return [t for layer in cache.layers for t in leaves(layer.state)]


def join_rows(cache, more) -> None:
    """Append the rows of ``more`` (an fla cache of the same model) to ``cache``, in place."""
    for layer, other in zip(cache.layers, more.layers, strict=True):
        mine, theirs = leaves(layer.state), leaves(other.state)
        if len(mine) != len(theirs):
            raise TypeError(f"cannot join cache states of {len(mine)} and {len(theirs)} tensors")
        layer.state = rebuild(layer.state, (torch.cat([a, b]) for a, b in zip(mine, theirs)))
