"""config.json checked against the tensors its safetensors files hold, before anything is built. The files'
headers name every tensor and its shape (JSON before the data: nothing is loaded), so a config that lies about
its weights (``num_hidden_layers: 40000`` over two layers, which would build for minutes and gigabytes before
failing) is refused in one line naming the field and both values. Each check runs where the config has the
field and the weights have the tensor it is read from; the families' tensor names differ (fla's
``model.layers.N``, Mamba's ``backbone.layers.N``, GPT-2's ``transformer.h.N``, GPT-NeoX's ``embed_in``)."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

from ccq_eval.models.load_errors import ModelLoadError

HEADER_MOST = 100 << 20  # safetensors' own limit on a header

LAYER = re.compile(r"\.(?:layers|h|blocks)\.(\d+)\.")
EMBEDDING = re.compile(r"(?:^|\.)(?:embeddings|embed_tokens|wte|embed_in|word_embeddings)\.weight$")
QUERY = re.compile(r"\.0\.(?:.*\.)?(?:q_proj|query)\.weight$")
FUSED_QKV = re.compile(r"\.0\.(?:.*\.)?query_key_value\.weight$")
KEY = re.compile(r"\.0\.(?:.*\.)?k_proj\.weight$")
HEAD_DECAY = re.compile(r"\.0\.(?:.*\.)?A_log$")  # Mamba2: one decay per head

LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers")
HIDDEN_FIELDS = ("hidden_size", "n_embd", "d_model")
HEAD_FIELDS = ("num_heads", "num_attention_heads", "n_head")
KV_HEAD_FIELDS = ("num_key_value_heads", "num_kv_heads")


class ConfigWeightsMismatch(ModelLoadError):
    """A config field that the weight files' tensors contradict."""


def safetensors_shapes(files: list[Path]) -> dict[str, tuple[int, ...]]:
    """tensor name -> shape, from each file's header alone."""
    shapes: dict[str, tuple[int, ...]] = {}
    for file in files:
        with open(file, "rb") as handle:
            size_bytes = handle.read(8)
            size = struct.unpack("<Q", size_bytes)[0] if len(size_bytes) == 8 else -1
            if not 0 < size <= HEADER_MOST:
                raise ConfigWeightsMismatch(f"weights {file.name}: not a safetensors file (its header length is "
                                            f"{size}); re-download or re-save the checkpoint (weights and config "
                                            "together)")
            try:
                header = json.loads(handle.read(size))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise ConfigWeightsMismatch(f"weights {file.name}: its safetensors header is cut short or not JSON; "
                                            "re-download or re-save the checkpoint (weights and config together)") from None
        _check_whole(file, header, 8 + size)
        shapes.update({name: tuple(entry.get("shape", ())) for name, entry in header.items()
                       if name != "__metadata__" and isinstance(entry, dict)})
    return shapes


def _check_whole(file: Path, header: dict, data_start: int) -> None:
    """A file shorter than its header's last tensor ends was cut short (an interrupted copy, a damaged cache blob):
    said as such, not left for the loader to report as weights that do not match the config."""
    ends = [entry["data_offsets"][1] for entry in header.values()
            if isinstance(entry, dict) and isinstance(entry.get("data_offsets"), list) and len(entry["data_offsets"]) == 2]
    needed, actual = data_start + max(ends, default=0), file.stat().st_size
    if actual < needed:
        raise ConfigWeightsMismatch(f"weights {file.name}: cut short ({actual:,} of the {needed:,} bytes its header "
                                    "describes); re-download it (a copy in the HF cache: run once with network "
                                    "access, HF_HUB_OFFLINE unset)")


def _field(config: dict, names) -> tuple[str, int] | None:
    for name in names:
        if isinstance(config.get(name), int) and not isinstance(config.get(name), bool):
            return name, config[name]
    return None


def _first(shapes: dict, pattern: re.Pattern, dims: int) -> tuple[str, tuple[int, ...]] | None:
    return next(((n, s) for n, s in sorted(shapes.items()) if pattern.search(n) and len(s) == dims), None)


def mismatches(config: dict, shapes: dict[str, tuple[int, ...]]) -> list[str]:
    """What in the config the tensors contradict, each as 'field = value, but ...' (none: they agree)."""
    found = []
    layers = {int(m.group(1)) for name in shapes if (m := LAYER.search(name))}
    if layers and (field := _field(config, LAYER_FIELDS)) and field[1] != max(layers) + 1:
        found.append(f"{field[0]} = {field[1]}, but the weights hold {max(layers) + 1} layers")
    if embedding := _first(shapes, EMBEDDING, 2):
        name, (rows, width) = embedding
        if (field := _field(config, ("vocab_size",))) and field[1] != rows:
            found.append(f"vocab_size = {field[1]}, but {name} has {rows} rows")
        if (field := _field(config, HIDDEN_FIELDS)) and field[1] != width:
            found.append(f"{field[0]} = {field[1]}, but {name} is {width} wide")
    found += _head_mismatches(config, shapes)
    return found


def _head_mismatches(config: dict, shapes: dict) -> list[str]:
    found = []
    if heads := _field(config, HEAD_FIELDS):
        if decay := _first(shapes, HEAD_DECAY, 1):
            if decay[1][0] != heads[1]:
                found.append(f"{heads[0]} = {heads[1]}, but {decay[0]} holds {decay[1][0]} heads")
        elif query := (_first(shapes, QUERY, 2) or _first(shapes, FUSED_QKV, 2)):
            rows = query[1][0] // (3 if FUSED_QKV.search(query[0]) else 1)
            if heads[1] > rows or rows % heads[1]:
                found.append(f"{heads[0]} = {heads[1]}, but {query[0]} has {rows} query rows, not a multiple of it")
    if (kv_heads := _field(config, KV_HEAD_FIELDS)) and (key := _first(shapes, KEY, 2)):
        if kv_heads[1] > key[1][0] or key[1][0] % kv_heads[1]:
            found.append(f"{kv_heads[0]} = {kv_heads[1]}, but {key[0]} has {key[1][0]} rows, not a multiple of it")
    return found + _hybrid_attention_mismatches(config, shapes)


def _hybrid_attention_mismatches(config: dict, shapes: dict) -> list[str]:
    """fla's hybrids (Samba, a GDN with attention layers) describe their attention layers in ``attn``."""
    attn = config.get("attn")
    if not isinstance(attn, dict) or not isinstance(attn.get("layers"), list) or not attn["layers"]:
        return []
    layer = attn["layers"][0]
    found = []
    for field, projection in (("num_heads", "q_proj"), ("num_kv_heads", "k_proj")):
        value = attn.get(field)
        weight = _first(shapes, re.compile(rf"\.{layer}\.(?:.*\.)?{projection}\.weight$"), 2)
        if isinstance(value, int) and value > 0 and weight and (value > weight[1][0] or weight[1][0] % value):
            found.append(f"attn.{field} = {value}, but {weight[0]} has {weight[1][0]} rows, not a multiple of it")
    return found


def check_config_against_weights(path: Path, config: dict, files: list[Path]) -> None:
    """Refuses, in one line, a config the safetensors headers contradict (pickle weights are not read here)."""
    if not all(f.suffix == ".safetensors" for f in files):
        return
    try:
        found = mismatches(config, safetensors_shapes(files))
    except ConfigWeightsMismatch as exc:
        raise ConfigWeightsMismatch(f"model {str(path)!r}: {exc}") from None
    if found:
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise ConfigWeightsMismatch(f"model {str(path)!r}: config.json says {found[0]}{more}; the config does not "
                                    "describe these weights: re-save the checkpoint (config and weights together)")
