"""What a model family declares, and the arithmetic its cache formula shares. Pure Python (no torch): the reports
name a row's family from the config stored with its run, and `ccq-eval --help` reads nothing heavier."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

NO_LINEAR_READ = "its state is not read as o = S q from keys written into S"
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2, "float64": 8}


@dataclass(frozen=True)
class Patch:
    """One of fla's Triton-only names the CPU backend replaces (ops/cpu_forms.py): ``symbol`` in ``module`` is
    "name", "Class.method" or "DICT[key]"; ``replacement`` is "module:function" (imported when installed)."""

    module: str
    symbol: str
    replacement: str
    may_be_absent: bool = False  # fla defines some names only when an optional package imports (flash-attn)
    # fla dispatches this entry point itself (fla.backends, @dispatch): the replacement is registered as an fla backend
    # for CPU tensors instead of replacing the name
    dispatched: bool = False

    @property
    def qualname(self) -> str:
        return f"{self.module}.{self.symbol}"

    def resolved(self):
        """The replacement function itself ("module:function" imported: only when a route or backend installs it)."""
        import importlib

        module, function = self.replacement.split(":")
        return getattr(importlib.import_module(module), function)


@dataclass(frozen=True)
class Family:
    """One model family: its catalogue row, its CCQ attachment, its CPU ops and patch targets, its cache formula."""

    model_type: str
    name: str  # shown in tables
    cpu: bool  # every op it calls has a torch implementation in ccq-eval's CPU backend
    ccq: str | None = None  # the CCQ model_type the checkpoint becomes under CCQ options
    ccq_name: str = ""  # the CCQ family's name in tables
    ccq_models: str = ""  # the module whose CCQ_MODELS (config, model, causal LM classes) transformers registers
    training_free: bool = False  # CCQ meant for --ccq-lambda on stock weights (no trained CCQ checkpoint)
    no_ccq: str = ""  # why CCQ does not apply (when ccq is None)
    gpu_note: str = ""  # what its CUDA path runs, where it is not only fla's Triton kernels
    cuda_refuses_fp32: str = ""  # the fla op that asserts on float32 inputs on CUDA (loading refuses it up front)
    cpu_note: str = ""  # what its CPU path runs, where it is not only ccq-eval's torch backend
    summary: tuple[str, str] = ("torch backend", "fla's kernels")  # (CPU, CUDA) in a few words: the README's table
    doc_note: str = ""  # said beside it in the docs' table (a caveat, what CCQ reads)
    patches: tuple[Patch, ...] = ()  # fla names its layers call that the CPU backend replaces
    # fla's one-token reads that the engine's fixed slots route to ccq-eval's step writing the state in place
    # (ops/in_place.py): module, name, and the step as "module:function"
    in_place_steps: tuple[Patch, ...] = ()
    # (config, length, dtype, ccq) -> bytes the model's cache holds after ``length`` tokens, batch 1; None where the
    # formula does not count this config (the efficiency table then shows the measured bytes alone)
    cache_bytes: Callable[[dict, int, str, bool], int | None] | None = None
    origin: str = "fla"  # who defines the model: "fla" or "transformers"
    # how the generation engine lays a batch of rows in its cache (generation/layouts.py): "packed" (a position-free
    # recurrence taking fla's cu_seqlens: one packed prefill), "separate" (position-free without cu_seqlens: a prefill
    # a prompt), "padded" (reads positions or keeps keys and values: left padding under a mask); "" says nothing, and
    # gets "padded", the layout every model runs correctly in, with a note
    cache_layout: str = ""
    # whether its cache takes several new tokens per call after a prefill (fla's Mamba layers take one); None says
    # nothing, and perplexity then runs the base model once over the sequence (correct everywhere), with a note
    cached_chunks: bool | None = None


def state_bytes(dtype: str) -> int:
    """The recurrent state's element size: float32, float64 where the model is (the CPU backend keeps the inputs'
    precision)."""
    return 8 if dtype == "float64" else 4


def short_conv_bytes(config: dict, key_dim: int, value_dim: int, dtype: str) -> int:
    """The short convolutions' state (q, k and v channels x conv_size) in the model's dtype, when it has them."""
    return (2 * key_dim + value_dim) * config["conv_size"] * DTYPE_BYTES[dtype] if config.get("use_short_conv") else 0


def ccq_bytes(heads: int, d_k: int, dtype: str) -> int:
    """CCQ's running key statistics: a count (int64) and, per head, the mean (d_k) and covariance (d_k^2): the paper's
    "one extra d_k x d_k matrix and one d_k vector per head"."""
    return 8 + heads * (d_k + d_k * d_k) * state_bytes(dtype)


def heads_of(config: dict) -> int:
    return config.get("num_heads") or config.get("num_attention_heads")


def attention_cache_bytes(config: dict, length: int, dtype: str, ccq: bool = False) -> int | None:
    """Keys and values, 2 x kv_heads x head_dim x L per layer in the model's dtype: the one cache that grows with L."""
    heads = heads_of(config)
    kv_heads = config.get("num_kv_heads") or config.get("num_key_value_heads") or heads
    head_dim = config.get("head_dim") or config["hidden_size"] // heads
    return config["num_hidden_layers"] * 2 * kv_heads * head_dim * length * DTYPE_BYTES[dtype]
