"""load_model on every family of catalog.py: each loads with its family in the provenance; CCQ options
turn DeltaNet / RetNet / HGRN2 into their CCQ families and are refused where CCQ has no read; what
cannot run as asked (an fla family without CPU ops, fp32 DeltaNet on CUDA, a model_type nobody
defines, a model without a causal-LM class) is refused in one line naming the way out."""

import json

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.models import ModelLoadError, load_model
from ccq_eval.models.loading import model_family
from tests.helpers import NEW_FAMILIES, byte_tokenizer, save_checkpoint, tiny_model

FAMILY = {"delta_net": "DeltaNet", "retnet": "RetNet", "hgrn2": "HGRN2", "mamba": "Mamba", "mamba2": "Mamba2",
          "samba": "Samba", "gdn_hybrid": "Gated DeltaNet hybrid (attn 1/2)", "llama": "Llama", "gpt_neox": "GPT-NeoX"}


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    root = tmp_path_factory.mktemp("families")
    torch.manual_seed(0)
    return {kind: save_checkpoint(tiny_model(kind), root / kind) for kind in NEW_FAMILIES}


@pytest.mark.parametrize("kind", NEW_FAMILIES)
def test_each_family_loads_with_its_family_and_the_same_logits(kind, checkpoints):
    loaded = load_model(str(checkpoints[kind]), device="cpu")
    reference = tiny_model(kind)
    reference.load_state_dict(loaded.model.state_dict())
    x = torch.randint(0, 256, (1, 30))
    with torch.no_grad():
        assert torch.equal(loaded.model(x).logits, reference(x).logits)
    assert loaded.provenance["family"] == FAMILY[kind]


@pytest.mark.parametrize("kind", ["delta_net", "retnet", "hgrn2"])
def test_ccq_lambda_turns_the_linear_families_into_their_ccq_family(kind, checkpoints):
    loaded = load_model(str(checkpoints[kind]), device="cpu", ccq_overrides={"ccq_fixed_lambda": 0.3})
    assert loaded.model.config.model_type == f"ccq_{kind}" and loaded.model.config.ccq_fixed_lambda == 0.3
    assert loaded.provenance["family"] == f"CCQ-{FAMILY[kind]}" and not loaded.provenance["newly_initialised"]
    layers = [m for m in loaded.model.modules() if hasattr(m, "ccq")]
    assert len(layers) == 2 and all(layer.ccq.fixed_lambda == 0.3 for layer in layers)


@pytest.mark.parametrize("kind,why", [
    ("mamba", "Mamba's selective scan"), ("mamba2", "Mamba2's selective scan"), ("samba", "sliding-window attention"),
    ("llama", "softmax attention"), ("gpt_neox", "softmax attention"),
])
def test_ccq_is_refused_where_there_is_no_linear_read(kind, why, checkpoints):
    with pytest.raises(ModelLoadError) as info:
        load_model(str(checkpoints[kind]), device="cpu", ccq_overrides={"ccq_fixed_lambda": 0.3})
    message = str(info.value)
    assert f"CCQ options do not apply to {FAMILY[kind]}" in message and why in message
    assert "DeltaNet" in message and "\n" not in message


def test_the_gdn_hybrid_takes_ccq_on_its_gdn_layers_only(checkpoints):
    model = load_model(str(checkpoints["gdn_hybrid"]), device="cpu", ccq_overrides={"ccq_fixed_lambda": 0.2}).model
    kinds = [type(block.attn).__name__ for block in model.model.layers]
    assert kinds == ["CCQGatedDeltaNet", "Attention"]


def _fake_checkpoint(folder, config: dict):
    """config.json, a weights file and a tokenizer: enough to reach the family checks, which come
    before any weight is read."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "model.safetensors").write_bytes(b"not read")
    byte_tokenizer().save_pretrained(folder)
    return folder


@pytest.mark.parametrize("config,message", [
    ({"model_type": "rwkv7"}, "fla's 'rwkv7' runs only on fla's Triton kernels"),
    ({"model_type": "my_own_arch"}, "unknown model_type 'my_own_arch': neither fla nor transformers"),
    ({"model_type": "t5"}, "model_type 't5' has no causal-LM class"),
])
def test_what_cannot_run_is_refused_up_front_through_the_cli(config, message, tmp_path, capsys):
    folder = _fake_checkpoint(tmp_path / "m", config)
    code = main(["--model", str(folder), "--suite", "sniah", "--store", str(tmp_path / "s.db"), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and err.count("\n") == 0
    assert not (tmp_path / "s.db").exists()
    if config["model_type"] == "rwkv7":
        assert "--device cuda" in err


def test_fp32_delta_net_is_refused_on_cuda_and_runs_on_cpu(tmp_path):
    raw = {"model_type": "delta_net"}
    with pytest.raises(ModelLoadError, match="chunk_delta_rule refuses float32 on CUDA; use --dtype bfloat16"):
        model_family(tmp_path, raw, torch.device("cuda"), torch.float32, None)
    assert model_family(tmp_path, raw, torch.device("cuda"), torch.bfloat16, None).name == "DeltaNet"
    assert model_family(tmp_path, raw, torch.device("cpu"), torch.float32, None).name == "DeltaNet"
    # on CUDA every fla family is allowed: its own kernels run there
    assert model_family(tmp_path, {"model_type": "rwkv7"}, torch.device("cuda"), torch.bfloat16, None).name == "rwkv7"
