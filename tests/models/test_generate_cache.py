"""models/generate_cache.py: from transformers 5.24 on, generate() hands a model its cache as ``cache`` and reads it
back from the outputs under that name; fla 0.6's models read and return ``past_key_values``. The adapter hands it
over both ways and declares the new name in its signature (generate() checks the arguments it passes). The generate
tests in test_models.py compare cached decoding with the full forward on the installed version (the lock's here,
the newest release in `make test-install`)."""

from __future__ import annotations

import inspect
import transformers
from packaging.version import Version

from ccq_eval.models import generate_cache


def test_the_rename_is_detected_on_the_installed_transformers():
    assert generate_cache.generate_passes_cache() == (Version(transformers.__version__) >= Version("5.24"))


def test_the_inputs_carry_the_cache_as_past_key_values_and_the_signature_takes_its_new_name():
    def prepare(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        return {"input_ids": input_ids, **({"cache": kwargs["cache"]} if "cache" in kwargs else {})}

    adapted = generate_cache._inputs_with_history(prepare)
    assert adapted(None, [1, 2], cache="C") == {"input_ids": [1, 2], "past_key_values": "C"}
    assert adapted(None, [1, 2]) == {"input_ids": [1, 2]}
    parameters = inspect.signature(adapted).parameters
    assert list(parameters)[-2:] == ["cache", "kwargs"] and parameters["cache"].default is None


class Outputs(dict):
    """A model output as transformers' ModelOutput behaves: keys, and the same values as attributes."""

    __getattr__ = dict.get


def test_the_cache_a_model_returns_goes_back_under_the_new_name():
    update = generate_cache._history_handed_back(lambda self, outputs, model_kwargs, **kw: dict(model_kwargs))
    assert update(None, Outputs(logits=1, past_key_values="S"), {"x": 1}) == {"x": 1, "cache": "S"}
    assert update(None, Outputs(logits=1, cache="T", past_key_values="S"), {"x": 1}) == {"x": 1}  # named already
    assert update(None, Outputs(logits=1), {"x": 1}) == {"x": 1}  # no cache (use_cache off)
