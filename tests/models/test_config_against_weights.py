"""A config that lies about its weights is refused from the safetensors headers, in one line naming the field and
both values, before anything is built: lying layer counts (40,000 over two layers once built for minutes and a
gigabyte), hidden sizes, head counts and vocabularies, on every family of the catalog; a tokenizer whose ids pass
the embedding's rows is refused up front too."""

from __future__ import annotations

import json
import time

import pytest
import torch

from ccq_eval.models import ModelLoadError, load_model
from ccq_eval.models.weight_shapes import mismatches, safetensors_shapes
from tests.helpers import save_checkpoint, tiny_model
from tests.suites.test_every_family import FAMILIES

HEAD_FIELD = {"llama": "num_attention_heads", "gpt_neox": "num_attention_heads"}
NO_HEADS = {"mamba", "samba"}  # a selective scan: no head count of its own (Samba's attention: attn.num_heads)
HYBRIDS = {"samba", "gdn_hybrid"}  # attention layers described in config["attn"]
HIDDEN_FIELD = "hidden_size"


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("lying")
    torch.manual_seed(0)
    return {kind: save_checkpoint(tiny_model(kind), root / kind) for kind in FAMILIES}


def lies(kind: str) -> list[tuple[str, int]]:
    base = kind.removeprefix("ccq_")
    found = [("num_hidden_layers", 40_000), (HIDDEN_FIELD, 128), ("vocab_size", 70_000)]
    if base not in NO_HEADS:
        found.append((HEAD_FIELD.get(base, "num_heads"), 40_000))
    if base in HYBRIDS:
        found += [("attn.num_heads", 40_000), ("attn.num_kv_heads", 3)]
    return found


def with_config(folder, tmp_path, **changes):
    import shutil

    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    config = json.loads((copy / "config.json").read_text())
    for field, value in changes.items():  # "attn.num_heads": a field of a nested object
        *parents, name = field.split(".")
        target = config
        for parent in parents:
            target = target[parent]
        target[name] = value
    (copy / "config.json").write_text(json.dumps(config))
    return copy


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_the_true_config_agrees_with_its_weights(kind, checkpoints):
    folder = checkpoints[kind]
    config = json.loads((folder / "config.json").read_text())
    assert mismatches(config, safetensors_shapes(sorted(folder.glob("*.safetensors")))) == []


@pytest.mark.parametrize("kind", list(FAMILIES))
def test_each_lying_size_field_is_refused_before_the_model_is_built(kind, checkpoints, tmp_path):
    for field, value in lies(kind):
        folder = with_config(checkpoints[kind], tmp_path / field, **{field: value})
        started = time.perf_counter()
        with pytest.raises(ModelLoadError) as refused:
            load_model(str(folder), device="cpu")
        message = str(refused.value)
        assert time.perf_counter() - started < 30  # nothing built: a 40,000-layer model would take minutes
        assert "\n" not in message and f"config.json says {field} = {value}, but" in message, (kind, message)
        assert "re-save the checkpoint" in message


def test_the_cli_says_it_in_one_line(checkpoints, tmp_path, capsys):
    from ccq_eval.cli import main

    folder = with_config(checkpoints["gla"], tmp_path, num_hidden_layers=40_000)
    assert main(["--model", str(folder), "--suite", "sniah", "--store", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "num_hidden_layers = 40000, but the weights hold 2 layers" in err
    assert not (tmp_path / "s.db").exists()


def test_a_header_that_is_not_safetensors_is_named(checkpoints, tmp_path):
    folder = with_config(checkpoints["gla"], tmp_path)
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ModelLoadError, match="model.safetensors: not a safetensors file"):
        load_model(str(folder), device="cpu")


def test_a_tokenizer_whose_ids_pass_the_embedding_is_refused(checkpoints, tmp_path):
    folder = with_config(checkpoints["gla"], tmp_path)
    tokenizer_file = folder / "tokenizer.json"
    data = json.loads(tokenizer_file.read_text())
    vocab = data["model"]["vocab"]
    space = next(token for token in vocab if token in (" ", "Ġ", "▁", "<0x20>"))
    vocab[space] = 70_000
    tokenizer_file.write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match=r"the tokenizer's id 70000 \(.*\) is past the model's 260 embedding rows"):
        load_model(str(folder), device="cpu")


def test_a_weights_file_cut_short_is_named_as_such(checkpoints, tmp_path, capsys):
    from ccq_eval.cli import main

    folder = with_config(checkpoints["gla"], tmp_path)
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    assert main(["--model", str(folder), "--suite", "sniah", "--store", str(tmp_path / "s.db")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "model.safetensors: cut short (" in err and "do not match" not in err
