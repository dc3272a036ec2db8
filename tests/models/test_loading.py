"""load_model: stock fla and CCQ checkpoints, provenance, and one-line errors for bad checkpoints."""

import hashlib
import json
import shutil

import pytest
import torch

from ccq_eval.models import ModelLoadError, load_model
from tests.helpers import byte_tokenizer, save_checkpoint, tiny_model


@pytest.fixture(scope="module")
def gla_dir(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("gla"), tmp_path_factory.mktemp("gla"))


@pytest.mark.parametrize("kind", ["gla", "gated_deltanet", "transformer", "ccq_gla", "ccq_gated_deltanet"])
def test_loads_each_supported_family_with_provenance(kind, tmp_path):
    model = tiny_model(kind)
    folder = save_checkpoint(model, tmp_path / kind)
    loaded = load_model(str(folder), device="cpu")
    assert loaded.model.training is False
    assert loaded.model.config.model_type == kind
    x = torch.randint(0, 256, (1, 20))
    with torch.no_grad():
        assert torch.equal(loaded.model(x).logits, model(x).logits)
    prov = loaded.provenance
    assert prov["weights_sha256"] == hashlib.sha256((folder / "model.safetensors").read_bytes()).hexdigest()
    assert prov["dtype"] == "float32" and prov["device"] == "cpu" and prov["backend"] == "torch-cpu"
    assert "versions" not in prov  # a run records them with the rest of the environment (ccq_eval/machine.py)
    assert prov["config"]["model_type"] == kind
    assert loaded.tokenizer("abc")["input_ids"] == byte_tokenizer()("abc")["input_ids"]


def test_stock_gla_becomes_ccq_with_overrides_and_reports_the_new_gate(gla_dir):
    loaded = load_model(str(gla_dir), device="cpu", ccq_overrides={"ccq_gate_bias_init": 1.5})
    assert loaded.model.config.model_type == "ccq_gla"
    assert loaded.provenance["newly_initialised"] == sorted(
        f"model.layers.{i}.attn.ccq.gate.{p}" for i in range(2) for p in ("bias", "weight"))
    gate = loaded.model.model.layers[0].attn.ccq.gate
    assert torch.equal(gate.bias, torch.full((2,), 1.5)) and torch.equal(gate.weight, torch.zeros(2, 16))
    fixed = load_model(str(gla_dir), device="cpu", ccq_overrides={"ccq_fixed_lambda": 0.0})
    stock = load_model(str(gla_dir), device="cpu")
    x = torch.randint(0, 256, (1, 30))
    with torch.no_grad():
        assert torch.equal(fixed.model(x).logits, stock.model(x).logits)
    assert fixed.provenance["newly_initialised"] == []
    assert fixed.provenance["ccq_overrides"] == {"ccq_fixed_lambda": 0.0}


def test_dtype_choice(gla_dir):
    loaded = load_model(str(gla_dir), device="cpu", dtype="bfloat16")
    assert next(loaded.model.parameters()).dtype == torch.bfloat16
    assert loaded.provenance["dtype"] == "bfloat16"


def _copy(src, dst):
    shutil.copytree(src, dst)
    return dst


def _break(kind, folder):
    if kind == "no_config":
        (folder / "config.json").unlink()
    elif kind == "bad_json":
        (folder / "config.json").write_text("{not json")
    elif kind == "unknown_type":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model_type"] = "mamba9"
        (folder / "config.json").write_text(json.dumps(cfg))
    elif kind == "pickle":
        (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    elif kind == "no_weights":
        (folder / "model.safetensors").unlink()
    elif kind == "no_tokenizer":
        for name in ("tokenizer.json", "tokenizer_config.json"):
            (folder / name).unlink()
    elif kind == "mismatch":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["hidden_size"] = 128
        (folder / "config.json").write_text(json.dumps(cfg))
    elif kind == "extra_layer":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["num_hidden_layers"] = 3
        (folder / "config.json").write_text(json.dumps(cfg))


@pytest.mark.parametrize("kind,message", [
    ("no_config", "no config.json"),
    ("bad_json", "config.json is not valid JSON"),
    ("unknown_type", "unknown model_type 'mamba9': neither fla nor transformers"),
    ("pickle", "weights are pickle"),
    ("no_weights", "no weights"),
    ("no_tokenizer", "no tokenizer files"),
    ("mismatch", "config.json says hidden_size = 128, but model.embeddings.weight is 64 wide"),
    ("extra_layer", "config.json says num_hidden_layers = 3, but the weights hold 2 layers"),
])
def test_bad_checkpoints_get_one_line_errors(kind, message, gla_dir, tmp_path):
    folder = _copy(gla_dir, tmp_path / "ckpt")
    _break(kind, folder)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder), device="cpu")
    assert message in str(info.value)
    assert "\n" not in str(info.value) and str(folder) in str(info.value)


def test_pickle_loads_only_when_the_caller_opts_in(gla_dir, tmp_path):
    folder = _copy(gla_dir, tmp_path / "ckpt")
    model = load_model(str(folder), device="cpu").model
    (folder / "model.safetensors").unlink()
    torch.save(model.state_dict(), folder / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="allow_pickle"):
        load_model(str(folder), device="cpu")
    assert load_model(str(folder), device="cpu", allow_pickle=True).provenance["weight_files"] == ["pytorch_model.bin"]


@pytest.mark.parametrize("spec,kwargs,message", [
    ("/no/such/checkpoint", {}, "no such path"),
    ("zoo:no-such-model", {}, "no zoo model of that name"),
    (None, {"dtype": "float8"}, "dtype 'float8': unknown"),
    (None, {"device": "cuda:0"}, "CUDA is not available"),
    (None, {"ccq_overrides": {"ccq_weighting": "decay"}}, "ccq_weighting='decay' is not implemented"),
])
def test_bad_arguments(spec, kwargs, message, gla_dir):
    with pytest.raises(ModelLoadError, match=message):
        load_model(spec or str(gla_dir), **{"device": "cpu", **kwargs})


def test_file_instead_of_folder(gla_dir):
    with pytest.raises(ModelLoadError, match="is a file"):
        load_model(str(gla_dir / "config.json"), device="cpu")


def test_ccq_overrides_on_a_transformer_are_refused(tmp_path):
    folder = save_checkpoint(tiny_model("transformer"), tmp_path / "tr")
    with pytest.raises(ModelLoadError, match=r"CCQ options do not apply to Transformer\+\+ \(softmax attention"):
        load_model(str(folder), device="cpu", ccq_overrides={"ccq_fixed_lambda": 0.3})


@pytest.mark.parametrize("content", [b"not a pickle at all" * 10, b"PK\x03\x04" + b"\0" * 100, b"\x80\x02}q\x00(X"])
def test_an_unreadable_pickle_is_named_as_the_pickle_file(gla_dir, tmp_path, content):
    """Under --allow-pickle, weights that are not a readable pickle: the line names the file and says pickle (it
    said the weights did not match config.json)."""
    folder = _copy(gla_dir, tmp_path / "ckpt")
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(content)
    with pytest.raises(ModelLoadError) as info:
        load_model(str(folder), device="cpu", allow_pickle=True)
    message = str(info.value)
    assert "pytorch_model.bin" in message and "not a readable pickle checkpoint" in message, message
    assert "\n" not in message and "config.json" not in message


def test_an_oversized_config_is_refused_before_it_is_read(gla_dir, tmp_path):
    """A 17 MB config.json (valid JSON, padded): refused by its size, naming the file, before any parse."""
    folder = _copy(gla_dir, tmp_path / "ckpt")
    config = (folder / "config.json").read_text()
    (folder / "config.json").write_text(config[:-1] + " " * (17 << 20) + "}")
    with pytest.raises(ModelLoadError, match=r"config.json is 17 MB, over the 16 MB") as info:
        load_model(str(folder), device="cpu")
    assert "\n" not in str(info.value)


def test_an_oversized_tokenizer_is_refused_by_the_limit_table(gla_dir, tmp_path, monkeypatch):
    from ccq_eval.models import file_limits

    folder = _copy(gla_dir, tmp_path / "ckpt")
    size = (folder / "tokenizer.json").stat().st_size
    monkeypatch.setattr(file_limits, "LIMITS", (("tokenizer.json", size - 1), *file_limits.LIMITS))
    with pytest.raises(ModelLoadError, match="tokenizer.json is .* MB, over the"):
        load_model(str(folder), device="cpu")
    monkeypatch.setattr(file_limits, "LIMITS", (("tokenizer.json", size), *file_limits.LIMITS))
    assert load_model(str(folder), device="cpu").tokenizer is not None  # at the limit: loads
