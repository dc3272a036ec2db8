"""The shipped zoo: every model loads by name and matches its card, the zoo fits its size budget, and
a short evaluation of one zoo model reproduces pinned numbers (greedy CPU decoding is deterministic)."""

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest

from ccq_eval import zoo_build
from ccq_eval.cli import main
from ccq_eval.models import load_model
from ccq_eval.models.loading import ZOO_DIR

# Measured once on the shipped weights (see the test below for how); tolerances: the score and the
# predictions exactly, NLL and perplexity to 1e-4 relative (float summation order across thread counts).
PINNED_MODEL = "transformer-tiny"  # the zoo's control, which retrieves: a pinned score of 100 can fail both ways
PINNED = {"score": 100.0, "answer_nll": 0.0038420532586780714, "answer_prefix": 1.0,
          "predictions_sha256": "14c987f240865d5e9750711010350f4460fe58cd31537fc95f0810341fa88577",
          "ppl_1k": 4.304290797910118}


def card_of(name: str) -> dict:
    lines = (ZOO_DIR / name / "MODEL_CARD.md").read_text().splitlines()
    return dict(line[2:].split(": ", 1) for line in lines if line.startswith("- "))


@pytest.mark.parametrize("name", list(zoo_build.ZOO))
def test_each_zoo_model_loads_by_name_and_matches_its_card(name):
    spec, card = zoo_build.ZOO[name], card_of(name)
    loaded = load_model(f"zoo:{name}", device="cpu")
    model = loaded.model
    assert model.config.model_type == spec.family == card["architecture"]
    assert sum(p.numel() for p in model.parameters()) == int(card["parameters"])
    assert int(card["seed"]) == spec.seed and int(card["steps"]) == spec.steps
    assert card["recipe"].startswith(f"{spec.lookup_steps} lookup steps") and card["data_order"] == str(spec.data_seed)
    assert model.config.training_context_length == int(card["training_length"]) == zoo_build.TRAIN_LENGTH
    weights = (ZOO_DIR / name / "model.safetensors").read_bytes()
    assert hashlib.sha256(weights).hexdigest() == card["sha256"] == loaded.provenance["weights_sha256"]
    assert 0 < float(card["final_loss_nats_per_byte"]) < 1.0  # trained: a random byte model sits at ln 260 = 5.6


def test_the_zoo_fits_its_size_budget_in_bf16():
    files = [p for p in ZOO_DIR.rglob("*") if p.is_file()]
    assert sum(p.stat().st_size for p in files) <= 25_000_000
    for name in zoo_build.ZOO:
        raw = (ZOO_DIR / name / "model.safetensors").read_bytes()
        header = json.loads(raw[8 : 8 + int.from_bytes(raw[:8], "little")])  # safetensors: u64 length, JSON
        assert {v["dtype"] for k, v in header.items() if k != "__metadata__"} == {"BF16"}


def test_a_zoo_model_reproduces_its_pinned_numbers(tmp_path):
    store = tmp_path / "s.db"
    assert main(["--model", f"zoo:{PINNED_MODEL}", "--suite", "sniah", "--tasks", "1", "--lengths", "1k",
                 "--samples", "5", "--store", str(store), "--device", "cpu"]) == 0
    data = tmp_path / "data" / "longppl"
    data.mkdir(parents=True)
    essays = (Path(zoo_build.__file__).parent / "data" / "text" / "essays.txt").read_text()
    (data / "pg19.jsonl").write_text(json.dumps({"text": essays}) + "\n")  # the fixture document: shipped, fixed
    assert main(["--model", f"zoo:{PINNED_MODEL}", "--suite", "longppl", "--tasks", "pg19", "--lengths", "1k",
                 "--samples", "1", "--data-dir", str(tmp_path / "data"), "--store", str(store), "--device", "cpu"]) == 0
    db = sqlite3.connect(store)
    metrics = {(task, m): v for task, m, v in db.execute("SELECT task, metric, value FROM metrics")}
    predictions = [p for (p,) in db.execute("SELECT s.prediction FROM samples s JOIN units u ON u.id = s.unit_id "
                                            "WHERE u.task = 'sniah_1' ORDER BY s.idx")]
    measured = {"score": metrics[("sniah_1", "score")], "answer_nll": metrics[("sniah_1", "answer_nll")],
                "answer_prefix": metrics[("sniah_1", "answer_prefix")],
                "predictions_sha256": hashlib.sha256(json.dumps(predictions).encode()).hexdigest(),
                "ppl_1k": metrics[("longppl_pg19", "perplexity")]}
    assert measured["score"] == PINNED["score"] and measured["predictions_sha256"] == PINNED["predictions_sha256"]
    assert measured["answer_prefix"] == pytest.approx(PINNED["answer_prefix"], abs=1e-9)
    assert measured["answer_nll"] == pytest.approx(PINNED["answer_nll"], rel=1e-4, abs=1e-6)
    assert measured["ppl_1k"] == pytest.approx(PINNED["ppl_1k"], rel=1e-4)
