"""transformers' own causal LMs (Llama, GPT-NeoX, Qwen, ...): softmax attention in native torch on every device, a
keys-and-values cache; CCQ does not apply. Any model_type no fla family claims is one of these."""

from __future__ import annotations

from ccq_eval.families.base import NO_LINEAR_READ, Family, attention_cache_bytes

# a few names read better than the model_type
NAMES = {"llama": "Llama", "gpt_neox": "GPT-NeoX", "qwen2": "Qwen2", "qwen3": "Qwen3", "mistral": "Mistral",
         "gpt2": "GPT-2", "opt": "OPT", "phi3": "Phi-3", "gemma": "Gemma", "olmo": "OLMo", "olmo2": "OLMo2"}


def transformers_family(model_type: str) -> Family:
    return Family(model_type=model_type, name=NAMES.get(model_type, model_type), cpu=True,
                  no_ccq=f"softmax attention: {NO_LINEAR_READ}", gpu_note="native torch", cpu_note="native torch",
                  cache_bytes=attention_cache_bytes, origin="transformers", cache_layout="padded",
                  cached_chunks=True)
