"""`ccq-eval zoo build`: a short build runs, resumes from its own checkpoint, and exports models
that load by path and as zoo:<name>; every model sees the same batches."""

import json

import pytest
import torch

from ccq_eval import zoo_build
from ccq_eval.cli import main
from ccq_eval.models import load_model


def test_batches_are_shared_and_seeded():
    config = zoo_build.TrainConfig(steps=10, lookup_steps=2, batch=4)
    a, b = zoo_build.Batches(config), zoo_build.Batches(config)
    for step in (0, 7):
        ids_a, targets_a, weights_a = a.batch(step)
        ids_b, targets_b, weights_b = b.batch(step)
        assert torch.equal(ids_a, ids_b) and torch.equal(targets_a, targets_b) and torch.equal(weights_a, weights_b)
        assert ids_a.shape == targets_a.shape == weights_a.shape and ids_a.shape[1] <= zoo_build.TRAIN_LENGTH
        assert torch.equal(ids_a[:, 1:], targets_a[:, :-1].clamp(min=0).where(targets_a[:, :-1] >= 0, ids_a[:, 1:]))
    assert not torch.equal(a.batch(0)[0], a.batch(1)[0])
    # the haystack stage's curriculum: from its first step to the training length at half of its steps
    assert a.curriculum_length(2) == zoo_build.SHORTEST_HAYSTACK_DOC and a.curriculum_length(6) == zoo_build.TRAIN_LENGTH + 1
    essays = zoo_build.Batches(zoo_build.TrainConfig(steps=10, lookup_steps=2, batch=2, needle_share=0.0))
    # a batch is as long as its longest document: the curriculum's early batches are shorter
    assert [essays.batch(s)[0].shape[1] for s in (2, 9)] == [zoo_build.SHORTEST_HAYSTACK_DOC - 1, zoo_build.TRAIN_LENGTH]


def test_the_lookup_stage_is_needle_and_question_alone_then_haystacks_follow():
    from ccq_eval.byte_tokenizer import byte_tokenizer
    from ccq_eval.suites.sniah import data as sniah

    config = zoo_build.TrainConfig(steps=10, lookup_steps=3, lookup_batch=5, batch=4, needle_share=1.0)
    batches, tok = zoo_build.Batches(config), byte_tokenizer()
    ids, targets, weights = batches.batch(2)
    assert ids.shape[0] == 5
    for row in range(5):
        text = tok.decode(targets[row][targets[row] >= 0])
        needle, question = text.split("\n")
        key, value = needle.removeprefix("One of the special magic numbers for ").removesuffix(".").split(" is: ")
        assert question == sniah.ANSWER_PREFIX.format(type="number", query=key) + " " + value + "."
        assert len(value) == 7 and value.isdigit() and len(text) < 200
    ids, _, _ = batches.batch(3)  # the first haystack step: full S-NIAH-1 prompts with RULER's header
    assert ids.shape[0] == 4
    for row in range(4):
        assert tok.decode(ids[row][ids[row] != tok.pad_token_id]).startswith("<s>A special magic number is hidden")


def test_needle_documents_fill_their_length_with_filler_lines():
    import random

    from ccq_eval.suites.sniah import data as sniah

    batches = zoo_build.Batches(zoo_build.TrainConfig())
    for length in (300, 640, 1024):
        ids, answer_length = batches.needle_doc(random.Random(length), length)
        text = batches.tokenizer.decode(ids[1:])
        lines = text.count(sniah.REPEAT_FILLER)
        if length == 300:  # shorter than the template: no filler at all
            assert lines == 0
        else:  # within one filler line (and its newline) of the length, never over it
            assert length - len(sniah.REPEAT_FILLER) - 1 < len(ids) <= length and lines > 0
        assert answer_length == 8 and text.endswith(".") and text[-8:-1].isdigit()
        assert text[-8:-1] in text[:-8]  # the needle holds the answer


def test_the_learning_rate_warms_up_holds_through_the_lookup_stage_then_decays():
    config = zoo_build.TrainConfig(steps=100, lookup_steps=40, warmup=10, lr=1e-3)
    lrs = [zoo_build._lr(config, s) for s in range(100)]
    assert lrs[0] == pytest.approx(1e-4) and lrs[9] == pytest.approx(1e-3)
    assert all(lr == 1e-3 for lr in lrs[10:41])
    assert all(a > b for a, b in zip(lrs[40:], lrs[41:]))  # cosine over the haystack stage
    assert lrs[-1] == pytest.approx(1e-4, rel=0.01)


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
