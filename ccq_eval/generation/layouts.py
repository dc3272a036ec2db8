"""How a batch of rows sits in a model's cache, as the model's family states it (``Family.cache_layout``; a hybrid with
attention layers is ``padded``; a family that states nothing gets ``padded``, with a note) (``layout_for``).

- ``packed``: every token mixer is a recurrence that reads no position and takes fla's variable-length
  ``cu_seqlens`` (GLA, Gated DeltaNet, DeltaNet, HGRN2 and their CCQ versions). The prompts are prefilled as one
  packed sequence, no padding inside the recurrence; each one's final state seeds its row of the cache. On CUDA the
  packed total is padded to a fixed rung by a sequence of its own (packing.py), so kernels compile once. Rows are
  independent, so a finished row leaves and a new prompt joins the running batch.
- ``separate``: a position-free recurrence without ``cu_seqlens`` (fla's Mamba, Mamba2): each prompt is prefilled
  alone and the caches are joined; rows leave and join as above.
- ``padded``: anything that reads positions or keeps keys and values (attention, hybrids, RetNet's rotations,
  transformers' models): the batch is prefilled left-padded under an attention mask, as lm-eval batches it, the mask
  and positions grow with each step; finished rows leave, and the batch refills once it is empty."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import torch

from ccq_eval.generation.cache_rows import copy_rows, join_rows, keep_rows
from ccq_eval.generation.packing import padded_total

LAYOUTS = ("packed", "separate", "padded")
_noted: set[str] = set()  # model_types whose missing layout was noted once


def layout_name(model, family=None) -> str:
    """The family's layout (``family``: the model's, where the caller has it); ``padded`` for a hybrid (its attention
    layers read positions and keep keys and values) and for a family that states none."""
    from ccq_eval.families import family_of, hybrid_layers

    declared = (family or family_of(model)).cache_layout
    if declared and declared not in LAYOUTS:
        raise ValueError(f"family {model.config.model_type!r}: cache_layout {declared!r} is not one of {LAYOUTS}")
    if hybrid_layers(model.config.to_dict()):
        return "padded"
    if not declared:
        if model.config.model_type not in _noted:
            _noted.add(model.config.model_type)
            logging.getLogger(__name__).warning(
                "%s: its family states no cache layout; generation left-pads its rows (correct for every model, "
                "slower than packed prefill for a position-free recurrence); set Family.cache_layout",
                model.config.model_type)
        return "padded"
    return declared


@dataclass
class Batch:
    """The running rows' cache, and for the padded layout their attention mask and next positions."""

    cache: object
    mask: torch.Tensor | None = None
    positions: torch.Tensor | None = None


def _last_logits(out) -> torch.Tensor:
    return out.logits[:, -1]


class Independent:
    """Rows that share nothing but the weights (``packed`` and ``separate``)."""

    refills = True

    def __init__(self, model, packed: bool, pad: bool = False):
        self.model, self.packed, self.pad = model, packed, pad and packed  # pad: to packing.py's rungs (CUDA)
        self.name = "packed" if packed else "separate"

    def _ids(self, tokens) -> torch.Tensor:
        return torch.tensor(tokens, dtype=torch.long, device=self.model.device)

    def prefill(self, prompts: list[tuple[int, ...]]) -> tuple[Batch, torch.Tensor]:
        """The batch after each prompt, and each prompt's next-token logits [N, V]."""
        if not self.packed:
            outs = [self.model(self._ids(p)[None], use_cache=True, logits_to_keep=1) for p in prompts]
            cache = outs[0].past_key_values
            for out in outs[1:]:
                join_rows(cache, out.past_key_values)
            return Batch(cache), torch.cat([_last_logits(out) for out in outs])
        lengths = [len(p) for p in prompts]
        extra = padded_total(sum(lengths)) - sum(lengths) if self.pad else 0
        ends = torch.tensor(lengths + ([extra] if extra else [])).cumsum(0)
        cu_seqlens = torch.cat([torch.zeros(1, dtype=torch.long), ends]).to(self.model.device)
        tokens = [t for p in prompts for t in p] + [0] * extra  # the padding: a sequence of its own, behind them
        out = self.model(self._ids(tokens)[None], cu_seqlens=cu_seqlens, use_cache=True,
                         logits_to_keep=cu_seqlens[1:len(prompts) + 1] - 1)
        if extra:
            keep_rows(out.past_key_values, list(range(len(prompts))))
        return Batch(out.past_key_values), out.logits[0]

    def step(self, batch: Batch, tokens: list[int]) -> torch.Tensor:
        out = self.model(self._ids(tokens)[:, None], past_key_values=batch.cache, use_cache=True, logits_to_keep=1)
        batch.cache = out.past_key_values
        return _last_logits(out)

    def keep(self, batch: Batch, rows: list[int]) -> None:
        keep_rows(batch.cache, rows)

    def copy(self, batch: Batch, rows: list[int]) -> Batch:
        return Batch(copy_rows(batch.cache, rows))

    def join(self, batch: Batch, more: Batch) -> None:
        join_rows(batch.cache, more.cache)


class Padded:
    """Left-padded rows under an attention mask (positions from it, for transformers' models)."""

    name, refills = "padded", False

    def __init__(self, model, family):
        self.model = model
        # transformers' models take positions from the caller (generate() derives them from the mask); fla's layers
        # derive them from the mask themselves
        self.passes_positions = family.origin == "transformers"

    def prefill(self, prompts: list[tuple[int, ...]]) -> tuple[Batch, torch.Tensor]:
        width, device = max(len(p) for p in prompts), self.model.device
        ids = torch.zeros((len(prompts), width), dtype=torch.long)
        mask = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, prompt in enumerate(prompts):
            ids[row, width - len(prompt):] = torch.tensor(prompt)
            mask[row, width - len(prompt):] = 1
        ids, mask = ids.to(device), mask.to(device)
        extra = {}
        if self.passes_positions:
            extra["position_ids"] = (mask.cumsum(-1) - 1).clamp(min=0)
        out = self.model(ids, attention_mask=mask, use_cache=True, logits_to_keep=1, **extra)
        return Batch(out.past_key_values, mask, mask.sum(-1)), _last_logits(out)

    def step(self, batch: Batch, tokens: list[int]) -> torch.Tensor:
        batch.mask = torch.cat([batch.mask, torch.ones_like(batch.mask[:, :1])], dim=1)
        extra = {"position_ids": batch.positions[:, None]} if self.passes_positions else {}
        ids = torch.tensor(tokens, dtype=torch.long, device=self.model.device)[:, None]
        out = self.model(ids, attention_mask=batch.mask, past_key_values=batch.cache, use_cache=True,
                         logits_to_keep=1, **extra)
        batch.cache, batch.positions = out.past_key_values, batch.positions + 1
        return _last_logits(out)

    def keep(self, batch: Batch, rows: list[int]) -> None:
        keep_rows(batch.cache, rows)
        index = torch.tensor(rows, device=batch.mask.device)
        batch.mask, batch.positions = batch.mask[index], batch.positions[index]

    def copy(self, batch: Batch, rows: list[int]) -> Batch:
        index = torch.tensor(rows, device=batch.mask.device)
        return Batch(copy_rows(batch.cache, rows), batch.mask[index], batch.positions[index])

    def join(self, batch: Batch, more: Batch) -> None:
        raise NotImplementedError("a padded batch refills only once it is empty")


def pads(model) -> bool:
    """Whether packed prefills are padded to fixed totals (packing.py): where kernels compile per shape, on CUDA."""
    return model.device.type == "cuda"


def layout_for(model):
    """The model's layout, its family resolved once."""
    from ccq_eval.families import family_of

    family = family_of(model)
    name = layout_name(model, family)
    return Padded(model, family) if name == "padded" else Independent(model, packed=name == "packed", pad=pads(model))
