"""`ccq-eval zoo build`: a short build runs, resumes from its own checkpoint, and exports models
that load by path and as zoo:<name>; every model sees the same batches."""

import json

import pytest
import torch

from ccq_eval import zoo_build
from ccq_eval.cli import main
from ccq_eval.models import load_model


def test_batches_are_shared_and_seeded():
    config = zoo_build.TrainConfig(steps=10, batch=4)
    a, b = zoo_build.Batches(config), zoo_build.Batches(config)
    for step in (0, 7):
        ids_a, targets_a, weights_a = a.batch(step)
        ids_b, targets_b, weights_b = b.batch(step)
        assert torch.equal(ids_a, ids_b) and torch.equal(targets_a, targets_b) and torch.equal(weights_a, weights_b)
        assert ids_a.shape == targets_a.shape == weights_a.shape and ids_a.shape[1] <= zoo_build.TRAIN_LENGTH
        assert torch.equal(ids_a[:, 1:], targets_a[:, :-1].clamp(min=0).where(targets_a[:, :-1] >= 0, ids_a[:, 1:]))
    assert not torch.equal(a.batch(0)[0], a.batch(1)[0])
    assert a.curriculum_length(0) == zoo_build.SHORTEST_NEEDLE_DOC and a.curriculum_length(5) == zoo_build.TRAIN_LENGTH + 1
    essays = zoo_build.Batches(zoo_build.TrainConfig(steps=10, batch=2, needle_share=0.0))
    # the curriculum's early batches are shorter: a batch is as long as its longest document
    assert [essays.batch(s)[0].shape[1] for s in (0, 9)] == [zoo_build.SHORTEST_NEEDLE_DOC - 1, zoo_build.TRAIN_LENGTH]


def test_answer_bytes_carry_the_answer_weight():
    """In a needle document exactly the answer's digits and full stop weigh answer_weight; padding weighs 0."""
    from ccq_eval.byte_tokenizer import byte_tokenizer

    config = zoo_build.TrainConfig(steps=10, batch=8, needle_share=1.0)
    ids, targets, weights = zoo_build.Batches(config).batch(3)
    tok = byte_tokenizer()
    for row in range(ids.shape[0]):
        heavy = (weights[row] == config.answer_weight).nonzero().flatten()
        answer = tok.decode(targets[row, heavy])
        assert len(heavy) == 8 and answer[:7].isdigit() and answer[7] == "."
        before = tok.decode(targets[row, heavy[0] - 40 : heavy[0]])
        assert before.endswith("mentioned in the provided text is ")
        assert (weights[row][targets[row] == -100] == 0).all()


def test_weighted_loss_reduces_to_the_mean_cross_entropy():
    torch.manual_seed(0)
    logits, targets = torch.randn(2, 5, 7), torch.randint(0, 7, (2, 5))
    targets[1, 3:] = -100
    weights = (targets >= 0).float()
    reference = torch.nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten(), ignore_index=-100)
    assert zoo_build.weighted_loss(logits, targets, weights).item() == pytest.approx(reference.item(), rel=1e-6)
    weights[0, 0] = 3.0  # one target counted three times
    by_hand = (reference * 8 + 2 * torch.nn.functional.cross_entropy(logits[0, :1], targets[0, :1])) / 10
    assert zoo_build.weighted_loss(logits, targets, weights).item() == pytest.approx(by_hand.item(), rel=1e-6)


def test_retention_init_slows_the_gla_forget_gate():
    model = zoo_build.build_model(zoo_build.ZOO["gla-tiny"])
    x = torch.randn(1, 3, zoo_build.WIDTH["hidden_size"])
    attn = model.model.layers[0].attn
    keep = torch.exp(torch.nn.functional.logsigmoid(attn.gk_proj(x)) / attn.gate_logit_normalizer)
    assert keep.min() > 0.995  # per byte, at initialisation


def test_build_resume_export_and_load(tmp_path, monkeypatch):
    work, out = tmp_path / "work", tmp_path / "zoo"
    assert main(["zoo", "build", "--steps", "2", "--models", "gla-tiny,ccq-gdn-tiny", "--work", str(work),
                 "--out", str(out)]) == 0
    log = [json.loads(line) for line in (work / "gla-tiny" / "loss.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in log] == [1, 2] and all(entry["loss"] > 0 for entry in log)
    assert main(["zoo", "build", "--steps", "4", "--models", "gla-tiny", "--work", str(work), "--out", str(out)]) == 0
    log = [json.loads(line) for line in (work / "gla-tiny" / "loss.jsonl").read_text().splitlines()]
    assert [entry["step"] for entry in log] == [1, 2, 3, 4]  # resumed at step 2, not restarted
    card = (out / "gla-tiny" / "MODEL_CARD.md").read_text()
    assert "- steps: 4" in card and "- training_length: 1024" in card
    loaded = load_model(str(out / "gla-tiny"), device="cpu")
    assert loaded.provenance["config"]["training_context_length"] == 1024
    assert next(loaded.model.parameters()).dtype == torch.float32  # bf16 on disk, fp32 on the CPU
    import ccq_eval.models.loading as loading

    monkeypatch.setattr(loading, "ZOO_DIR", out)
    assert load_model("zoo:ccq-gdn-tiny", device="cpu").model.config.model_type == "ccq_gated_deltanet"
    assert main(["zoo", "build", "--models", "mamba-tiny"]) == 2
