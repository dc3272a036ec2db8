"""Which model families ccq-eval runs, where, and whether CCQ attaches: one table, read by loading
(what to refuse up front), by the reports (the family column) and by the README's table.

Pure Python (no torch): the reports name a row's family from the config stored with its run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Family:
    name: str  # shown in tables
    cpu: bool  # every op it calls has a torch implementation in ccq-eval's CPU backend
    ccq: str | None = None  # the CCQ model_type the checkpoint becomes under CCQ options
    no_ccq: str = ""  # why CCQ does not apply (when ccq is None)
    gpu_note: str = ""  # what its CUDA path runs, where it is not only fla's Triton kernels


NO_LINEAR_READ = "its state is not read as o = S q from keys written into S"
FLA_FAMILIES = {
    "gla": Family("GLA", True, "ccq_gla"),
    "gated_deltanet": Family("Gated DeltaNet", True, "ccq_gated_deltanet"),
    "delta_net": Family("DeltaNet", True, "ccq_delta_net"),
    "retnet": Family("RetNet", True, "ccq_retnet"),
    "hgrn2": Family("HGRN2", True, "ccq_hgrn2"),
    "mamba": Family("Mamba", True, None, f"Mamba's selective scan: {NO_LINEAR_READ}",
                    "mamba_ssm's kernels when installed, else fla's torch fallback"),
    "mamba2": Family("Mamba2", True, None, f"Mamba2's selective scan: {NO_LINEAR_READ}",
                     "mamba_ssm's kernels when installed, else fla's torch fallback"),
    "samba": Family("Samba", True, None, f"Samba is Mamba plus sliding-window attention: {NO_LINEAR_READ}"),
    "transformer": Family("Transformer++", True, None, f"softmax attention: {NO_LINEAR_READ}"),
}
CCQ_FAMILIES = {
    "ccq_gla": Family("CCQ-GLA", True, "ccq_gla"),
    "ccq_gated_deltanet": Family("CCQ-GDN", True, "ccq_gated_deltanet"),
    "ccq_delta_net": Family("CCQ-DeltaNet", True, "ccq_delta_net"),
    "ccq_retnet": Family("CCQ-RetNet", True, "ccq_retnet"),
    "ccq_hgrn2": Family("CCQ-HGRN2", True, "ccq_hgrn2"),
}
# transformers' own causal LMs run in torch on every device; a few names read better than model_type
TRANSFORMERS_NAMES = {"llama": "Llama", "gpt_neox": "GPT-NeoX", "qwen2": "Qwen2", "qwen3": "Qwen3",
                      "mistral": "Mistral", "gpt2": "GPT-2", "opt": "OPT", "phi3": "Phi-3", "gemma": "Gemma"}


def family(model_type: str, origin: str = "transformers") -> Family:
    """The catalogue entry of a model_type; ``origin`` says who defines it when it is not listed
    ("fla" for another fla family, "transformers" for transformers' own)."""
    known = FLA_FAMILIES.get(model_type) or CCQ_FAMILIES.get(model_type)
    if known:
        return known
    if origin == "fla":
        return Family(model_type, False, None, "ccq-eval has no CCQ attachment for it")
    return Family(TRANSFORMERS_NAMES.get(model_type, model_type), True, None, f"softmax attention: {NO_LINEAR_READ}")


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
