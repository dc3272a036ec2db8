"""Every model family ccq-eval runs, one row each: a module (or a folder) here declares the family's catalogue row,
its CCQ attachment (the module of its CCQ classes), the fla names its CPU ops replace (``patches``), its cache
formula, the cache layout generation gives its rows and whether its cache takes multi-token chunks. The code those
rows name by string sits in ops/<family>/ (how its reads compute: the one-token step, the CPU torch forms) and
models/ccq_models/<family>.py (its CCQ model classes). Adding a family is one module; the README's and docs' model tables are
generated from these (``python -m ccq_eval.families.tables``; a test checks them).

Reading the registry is pure Python (no torch, fla or transformers): the reports name a row's family from the
config stored with its run."""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
from functools import lru_cache

from ccq_eval.families.base import DTYPE_BYTES, NO_LINEAR_READ, Family, Patch
from ccq_eval.families.transformers_lms import transformers_family

NOT_FAMILIES = ("base", "transformers_lms", "tables")  # modules here that declare no fla family
# the order the tables list them in (the paper's families first); a new family's module comes after these
ORDER = ("gla", "gated_deltanet", "delta_net", "retnet", "hgrn2", "mamba", "mamba2", "samba", "transformer")


@lru_cache(maxsize=None)
def fla_families() -> dict[str, Family]:
    """model_type -> Family of every fla family with a module here."""
    found = {}
    for module in pkgutil.iter_modules(__path__):
        if module.name not in NOT_FAMILIES:
            declared = importlib.import_module(f"{__name__}.{module.name}").FAMILY
            found[declared.model_type] = declared
    return {t: found[t] for t in sorted(found, key=lambda t: (ORDER.index(t) if t in ORDER else len(ORDER), t))}


def ccq_variant(backbone: Family) -> Family:
    """The CCQ family a backbone's checkpoint becomes under CCQ options (its own row in the tables)."""
    return dataclasses.replace(backbone, model_type=backbone.ccq, name=backbone.ccq_name)


@lru_cache(maxsize=None)
def ccq_families() -> dict[str, Family]:
    return {f.ccq: ccq_variant(f) for f in fla_families().values() if f.ccq}


def family(model_type: str, origin: str = "transformers") -> Family:
    """The family of a model_type; ``origin`` says who defines it when no module here does ("fla" for another fla
    family, which ccq-eval runs only on fla's kernels; "transformers" for transformers' own)."""
    known = fla_families().get(model_type) or ccq_families().get(model_type)
    if known:
        return known
    if origin == "fla":
        return Family(model_type, model_type, False, no_ccq="ccq-eval has no CCQ attachment for it")
    return transformers_family(model_type)


def family_of(model) -> Family:
    """The family of a built model: fla's own (its class is fla's), a CCQ one, or transformers'."""
    fla = type(model).__module__.startswith("fla.")
    return family(model.config.model_type, origin="fla" if fla else "transformers")


def backbone(model_type: str) -> Family:
    """The family itself for a backbone, its backbone's for a CCQ model_type."""
    return next((f for f in fla_families().values() if model_type in (f.model_type, f.ccq)), None) or family(model_type)


def hybrid_layers(config: dict) -> list[int]:
    """The softmax-attention layers of an fla hybrid (config ``attn.layers``), e.g. a GDN hybrid."""
    attn = config.get("attn") if isinstance(config, dict) else None
    layers = attn.get("layers") if isinstance(attn, dict) else None
    return sorted(layers) if isinstance(layers, list) else []


def family_name(config: dict) -> str:
    """A row's family as tables show it: "Gated DeltaNet", "GDN hybrid (attn 1/4)", "Llama", ..."""
    model_type = config.get("model_type") if isinstance(config, dict) else None
    if not isinstance(model_type, str):
        return ""  # a run recorded without a model config (hand-made stores, ingested results)
    name = family(model_type).name
    layers = hybrid_layers(config)
    if layers and model_type != "samba":  # Samba is a hybrid by definition
        total = config.get("num_hidden_layers")
        return f"{name} hybrid (attn {len(layers)}/{total})" if total else f"{name} hybrid"
    return name


def cache_bytes(config: dict, length: int, dtype: str) -> int | None:
    """The bytes a model's cache holds after ``length`` tokens (batch 1) counted from its config, for the families
    with a formula; None for hybrids (they interleave attention layers), other families, or a config that lacks the
    fields (a hand-made or ingested store)."""
    model_type = config.get("model_type", "")
    if DTYPE_BYTES.get(dtype) is None or config.get("attn"):
        return None
    formula = backbone(model_type).cache_bytes
    if formula is None:
        return None
    try:
        return formula(config, length, dtype, model_type in ccq_families())
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None


def cpu_patches() -> tuple[Patch, ...]:
    """Every family's patch targets (the names every family shares come from ops/cpu_forms.py)."""
    return tuple(p for f in fla_families().values() for p in f.patches)


__all__ = ["Family", "NO_LINEAR_READ", "Patch", "backbone", "cache_bytes", "ccq_families", "cpu_patches", "family",
           "family_name", "family_of", "fla_families", "hybrid_layers"]
