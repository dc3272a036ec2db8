"""Metrics that see below exact match: answer_prefix and answer_nll, per sample and per unit, and
the secondary table that shows them; stderr intervals in the lm / LongBench tables."""

import json
import sqlite3

import pytest
import torch
import torch.nn.functional as F

from ccq_eval.cli import main
from ccq_eval.suites.sniah.scoring import answer_prefix
from tests.helpers import save_checkpoint, tiny_model


def test_answer_prefix_hand_checked():
    assert answer_prefix(" 1234567.", "1234567") == 1.0
    assert answer_prefix("\n 1239999", "1234567") == pytest.approx(3 / 7)
    assert answer_prefix("The number is 1234567", "1234567") == 0.0  # from its start only
    assert answer_prefix("", "1234567") == 0.0
    assert answer_prefix("ABCDEF-x", "abcdef-0") == pytest.approx(7 / 8)  # case-insensitive, as RULER


def test_answer_nll_matches_a_direct_forward_and_lands_in_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    torch.manual_seed(0)
    folder = save_checkpoint(tiny_model("ccq_gla"), tmp_path / "m")
    store = tmp_path / "s.db"
    assert main(["--model", str(folder), "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "3",
                 "--store", str(store), "--device", "cpu"]) == 0
    db = sqlite3.connect(store)
    fields = [json.loads(f) for (f,) in db.execute("SELECT fields FROM samples ORDER BY idx")]
    metrics = dict(db.execute("SELECT metric, value FROM metrics"))
    assert metrics["answer_nll"] == pytest.approx(sum(f["answer_nll"] for f in fields) / 3)
    assert metrics["answer_prefix"] == pytest.approx(sum(f["answer_prefix"] for f in fields) / 3)
    # the first sample, by hand: NLL of " " + value after the prompt, averaged over the value's tokens
    from ccq_eval.suites.sniah import data as sniah
    from ccq_eval.models import load_model

    model, tok, _ = load_model(str(folder), device="cpu")
    record = sniah.load_or_generate("sniah_1", tok, 1024, 3, 0, None)[0][0]
    prompt = tok(sniah.prompt_of(record))["input_ids"]
    answer = tok(" " + record["outputs"][0], add_special_tokens=False)["input_ids"]
    ids = torch.tensor([prompt + answer])
    with torch.no_grad():
        logp = F.log_softmax(model(ids).logits[0, :-1].double(), -1)
    nll = -logp[len(prompt) - 1 :].gather(1, ids[0, len(prompt):, None]).mean().item()
    assert fields[0]["answer_nll"] == pytest.approx(nll, rel=1e-4)
    assert main(["tables", "--table", "sniah-partial", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    header = (tmp_path / "t" / "sniah-partial.csv").read_text().splitlines()[0]
    assert header == "label,family,S1 1K prefix %,S1 1K NLL"


def test_lm_and_longbench_tables_carry_stderr_intervals(tmp_path):
    from ccq_eval.catalogue import render_table
    from ccq_eval.store import Store

    store = Store(tmp_path / "s.db")
    run = store.writes.begin_run({"label": "m", "model_spec": "m", "weights_sha256": "w", "model_config": {},
                                  "ccq_overrides": {}, "dtype": "float32", "device": "cpu", "batch_size": 1, "seeds": {},
                                  "command_line": "", "versions": {}})
    store.writes.write_unit({"run_id": run, "suite": "lm", "task": "piqa", "context_length": 2048, "unit_key": "k",
                             "status": "complete", "started": "t", "finished": "t", "settings": {}},
                            [{"label": "m", "model": "m", "metric": "acc", "value": 60.0, "stderr": 2.0, "n": 100,
                              "higher_is_better": True, "is_primary": True}], [])
    md = render_table(store, "lm", ci=True)["md"]
    assert "60.00 ± 3.92" in md
    assert "60.00 ±" not in render_table(store, "lm")["md"]


@pytest.mark.parametrize("kind", ["gla", "ccq_gated_deltanet", "transformer"])
def test_answer_nll_from_the_generation_prefill_equals_the_loglikelihood_reference(kind, tmp_path, monkeypatch):
    """The fast path (answers scored from the prefill that starts decoding, packed or left-padded batches) against
    lm-eval's loglikelihood of the same prompts and answers: the same NLL per sample, every sample scored."""
    from lm_eval.api.instance import Instance

    from ccq_eval.models import load_model
    from ccq_eval.run import checkpoint_evaluand
    from ccq_eval.suites.sniah import driver as suite_sniah

    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    torch.manual_seed(0)
    folder = save_checkpoint(tiny_model(kind), tmp_path / "m")
    asked = []
    real = suite_sniah.generate_answers

    def spy(model, asks, budget):
        asked.extend(asks)
        return real(model, asks, budget)

    monkeypatch.setattr(suite_sniah, "generate_answers", spy)
    store = tmp_path / "s.db"
    assert main(["--model", str(folder), "--suite", "sniah", "--tasks", "1,2", "--lengths", "1k", "--samples", "5",
                 "--batch-size", "3", "--store", str(store), "--device", "cpu"]) == 0
    db = sqlite3.connect(store)
    fast = [json.loads(f)["answer_nll"] for (f,) in db.execute(
        "SELECT s.fields FROM samples s JOIN units u ON u.id = s.unit_id ORDER BY u.task, s.idx")]
    assert [json.loads(s)["answer_nll_from_prefill"] for (s,) in db.execute("SELECT settings FROM units")] == [5, 5]
    lm = checkpoint_evaluand(*load_model(str(folder), device="cpu"), max_length=1024, batch_size=1).lm
    tokenizer = lm.tokenizer
    requests = [Instance("loglikelihood", {}, (ask.prompt, ask.score), i) for i, ask in enumerate(asked)]
    reference = [-logprob / len(tokenizer(ask.score, add_special_tokens=False)["input_ids"])
                 for (logprob, _), ask in zip(lm.loglikelihood(requests, disable_tqdm=True), asked)]
    assert len(fast) == len(reference) == 10
    assert fast == pytest.approx(reference, abs=1e-5)
