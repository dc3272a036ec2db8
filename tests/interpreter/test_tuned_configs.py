"""run/tuned_configs.py on fla's real kernels (interpreted): the configs fla's autotuner chose, written in fla's own
format, read back by fla's own reader, and taken by a later run instead of tuning (FLA_CONFIG_DIR, FLA_CACHE_MODE)."""

from __future__ import annotations

import json

import torch
from fla.ops.utils import cache as fla_cache
from triton.runtime import autotuner as triton_autotuner

from ccq_eval.ops.cpu_forms import fla_kernels_on_cpu
from ccq_eval.run.tuned_configs import config_record, tuned_autotuners, write_tuned_configs
from tests.helpers import tiny_model


def _forward(model, ids):
    with torch.no_grad(), fla_kernels_on_cpu():
        return model(ids).logits


def _forget_tuning():
    """As a new process: no kernel tuned yet (earlier tests in this process tuned other families' kernels)."""
    for autotuner in tuned_autotuners():
        autotuner.cache.clear()


def test_tuned_configs_are_written_read_by_fla_and_taken_instead_of_tuning(tmp_path, monkeypatch):
    _forget_tuning()
    torch.manual_seed(0)
    model = tiny_model("gla", fuse_cross_entropy=False)
    ids = torch.randint(0, 256, (1, 70))
    tuned_before = _forward(model, ids)
    kernels, shapes = write_tuned_configs(tmp_path)
    tuned = tuned_autotuners()
    names = {autotuner.kernel_name for autotuner in tuned}
    assert kernels == len(names) >= 2 and shapes >= kernels  # GLA's chunk kernels are declared with fla's autotuner
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(f"{name}.json" for name in names)
    assert all(json.loads((tmp_path / f"{name}.json").read_text())["kernel_name"] == name for name in names)

    monkeypatch.setenv("FLA_CONFIG_DIR", str(tmp_path))
    monkeypatch.setattr(fla_cache, "FLA_CACHE_MODE", fla_cache.FlaCacheMode.STRICT)
    for autotuner in tuned:  # fla's reader finds each tuned shape's config, exactly
        for key, config in autotuner.cache.items():
            loaded = fla_cache.load_cached_config(autotuner.kernel_name, fla_cache.AutotuneKey(key))
            assert loaded == json.loads(json.dumps(config_record(config))), (autotuner.kernel_name, key)

    # a later run: nothing tuned in this process yet; tuning (pruning the candidates) is recorded
    _forget_tuning()
    pruned = []
    prune = triton_autotuner.Autotuner.prune_configs
    monkeypatch.setattr(triton_autotuner.Autotuner, "prune_configs",
                        lambda self, kwargs: pruned.append(self) or prune(self, kwargs))
    assert torch.equal(_forward(model, ids), tuned_before)
    assert not [a for a in pruned if isinstance(a, fla_cache.CachedAutotuner)]  # each took the folder's config
    assert all(autotuner.cache for autotuner in tuned)


def test_a_second_warm_up_merges_into_the_folder(tmp_path):
    _forget_tuning()
    torch.manual_seed(0)
    model = tiny_model("gla", fuse_cross_entropy=False)
    _forward(model, torch.randint(0, 256, (1, 70)))
    write_tuned_configs(tmp_path)
    first = {p.name: set(json.loads(p.read_text())["autotune_entries"]) for p in tmp_path.iterdir()}
    _forget_tuning()
    _forward(model, torch.randint(0, 256, (2, 200)))  # another batch and length: other tuning keys
    write_tuned_configs(tmp_path)
    second = {p.name: set(json.loads(p.read_text())["autotune_entries"]) for p in tmp_path.iterdir()}
    assert set(first) <= set(second)
    assert all(first[name] <= second[name] for name in first)  # kept what was there
    assert any(second[name] - first[name] for name in first)  # and added the new shapes
