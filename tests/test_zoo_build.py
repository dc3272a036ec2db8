"""`ccq-eval zoo build`: a short build runs, resumes from its own checkpoint, and exports models
that load by path and as zoo:<name>; every model sees the same batches."""

import json

import torch

from ccq_eval import zoo_build
from ccq_eval.cli import main
from ccq_eval.models import load_model


def test_batches_are_shared_and_seeded():
    config = zoo_build.TrainConfig(steps=10, batch=4)
    a, b = zoo_build.Batches(config), zoo_build.Batches(config)
    for step in (0, 7):
        ids_a, labels_a = a.batch(step)
        ids_b, labels_b = b.batch(step)
        assert torch.equal(ids_a, ids_b) and torch.equal(labels_a, labels_b)
        assert ids_a.shape == (4, zoo_build.TRAIN_LENGTH)
    assert not torch.equal(a.batch(0)[0], a.batch(1)[0])
    assert a.curriculum_length(0) == zoo_build.SHORTEST_NEEDLE_DOC and a.curriculum_length(5) == zoo_build.TRAIN_LENGTH + 1


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
