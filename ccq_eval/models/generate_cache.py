"""fla 0.6's models under transformers' generate() from 5.24 on: transformers renamed the cache it hands the model
from ``past_key_values`` to ``cache`` (and reads it back from the outputs under that name), while fla's models read
and return ``past_key_values``. Unadapted, every decoding step after the first runs without its history, silently.

``install_generate_cache_names`` adapts fla's generation mixin (the class every fla causal LM decodes through): the
model inputs transformers prepares carry the cache as ``past_key_values``, and the ``past_key_values`` the model
returns is handed back to transformers as ``cache``. Under older transformers, which use ``past_key_values``
throughout, it changes nothing. Installed where models load (loading.py) and by `ccq-eval lm-eval`; idempotent;
tests/models/test_models.py's generate tests compare cached decoding with the full forward on every version."""

from __future__ import annotations

import functools
import inspect

_INSTALLED = False


def generate_passes_cache() -> bool:
    """Whether this transformers' generate() hands the model its cache as ``cache`` (5.24 on)."""
    from transformers.generation import GenerationMixin

    return "cache" in inspect.signature(GenerationMixin.prepare_inputs_for_generation).parameters


def _inputs_with_history(prepare):
    @functools.wraps(prepare)
    def prepare_inputs_for_generation(self, *args, **kwargs):
        inputs = prepare(self, *args, **kwargs)
        if "cache" in inputs:  # transformers' name for it; fla's forward reads past_key_values
            inputs["past_key_values"] = inputs.pop("cache")
        return inputs

    # generate() checks the arguments it is given against this signature: it takes the cache under its new name
    signature = inspect.signature(prepare)
    parameters = list(signature.parameters.values())
    at = next((i for i, p in enumerate(parameters) if p.kind is p.VAR_KEYWORD), len(parameters))
    parameters.insert(at, inspect.Parameter("cache", inspect.Parameter.KEYWORD_ONLY, default=None))
    prepare_inputs_for_generation.__signature__ = signature.replace(parameters=parameters)
    return prepare_inputs_for_generation


def _history_handed_back(update):
    @functools.wraps(update)
    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, *args, **kwargs):
        updated = update(self, outputs, model_kwargs, *args, **kwargs)
        if "cache" not in outputs and getattr(outputs, "past_key_values", None) is not None:
            updated["cache"] = outputs.past_key_values
        return updated
    return _update_model_kwargs_for_generation


def install_generate_cache_names() -> None:
    global _INSTALLED
    if _INSTALLED or not generate_passes_cache():
        return
    from fla.models.generation_utils import FLAGenerationMixin

    FLAGenerationMixin.prepare_inputs_for_generation = _inputs_with_history(
        FLAGenerationMixin.prepare_inputs_for_generation)
    FLAGenerationMixin._update_model_kwargs_for_generation = _history_handed_back(
        FLAGenerationMixin._update_model_kwargs_for_generation)
    _INSTALLED = True
