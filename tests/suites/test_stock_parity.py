"""Parity with stock lm-eval: the task plugins under lm-eval's own command line (`ccq-eval lm-eval run`: lm-eval's CLI
and its HF model, `--include_path` on tasks/, each plugin building its data from the metadata) and `ccq-eval run` (the
drivers, which call the model's engine themselves) give the same prompts token for token and the same predictions and
scores sample for sample, for every kind of generating task on a zoo model: S-NIAH-1/2/3, a multi-needle task, two
recall tasks and two LongBench tasks at 1K, VT at 2K (its worked example outgrows 1K bytes), QA-1 at 4K (RULER's
ten documents a question outgrow 2K) and BABILong's QA1-QA2 at 2K (its prompt outgrows 1K bytes). Where S-NIAH's
early stop ended a row once its output scored 1 (or BABILong's at its first full stop), ccq-eval's prediction is the
start of lm-eval's, with the same score."""

from __future__ import annotations

import json
import shutil
import sqlite3

import pytest

from ccq_eval.cli import main
from ccq_eval.data import SHIPPED_RECORDS
from tests.suites.test_lm_eval_cli import LONGBENCH_DATA

MODEL = "zoo:gla-tiny"
SAMPLES = 2
# (suite, its tasks as ccq-eval names them, the plugins' names, length)
CASES = [("sniah", "1,2,3", "sniah_1,sniah_2,sniah_3", 1024),
         ("multi_niah", "niah_multikey_2", "niah_multikey_2", 1024),
         ("recall", "recall_nq,recall_triviaqa", "recall_nq,recall_triviaqa", 1024),
         ("longbench", "qasper,lcc", "longbench_qasper,longbench_lcc", 1024),
         ("ruler", "ruler_vt", "ruler_vt", 2048),
         ("ruler", "ruler_qa_squad", "ruler_qa_squad", 4096),
         ("babilong", "qa1,qa2", "babilong_qa1,babilong_qa2", 2048)]


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """The shipped QA and recall records beside the LongBench fixture: one --data-dir for both routes."""
    root = tmp_path_factory.mktemp("data")
    shutil.copytree(SHIPPED_RECORDS, root, dirs_exist_ok=True)
    shutil.copytree(LONGBENCH_DATA / "longbench", root / "longbench")
    return root


def stock_samples(output) -> dict:
    """(task, index) -> (prompt, prediction, score) from lm-eval's logged samples."""
    found = {}
    for path in output.rglob("samples_*.jsonl"):
        task = path.name[len("samples_"):].rsplit("_", 1)[0]
        for line in path.read_text().splitlines():
            entry = json.loads(line)
            found[(task, entry["doc"]["index"])] = (entry["arguments"]["gen_args_0"]["arg_0"],
                                                    entry["filtered_resps"][0], float(entry["score"]))
    return found


@pytest.mark.e2e
@pytest.mark.parametrize("suite,tasks,plugins,length", CASES, ids=[c[2] for c in CASES])
def test_stock_lm_eval_and_ccq_eval_run_agree_sample_for_sample(suite, tasks, plugins, length, data_dir, tmp_path,
                                                                monkeypatch):
    from ccq_eval.generation import text
    from ccq_eval.models import load_model

    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    metadata = json.dumps({"max_seq_lengths": [length], "num_samples": SAMPLES, "data_dir": str(data_dir)})
    assert main(["lm-eval", "run", "--model", "hf", "--model_args", f"pretrained={MODEL},dtype=float32",
                 "--tasks", plugins, "--metadata", metadata, "--device", "cpu", "--batch_size", "1",
                 "--log_samples", "--output_path", str(tmp_path / "stock")]) == 0
    stock = stock_samples(tmp_path / "stock")
    store = tmp_path / "ccq.db"
    prompts = []
    real = text.prompt_ids
    monkeypatch.setattr(text, "prompt_ids", lambda tokenizer, prompt: prompts.append(prompt) or real(tokenizer, prompt))
    assert main(["--model", MODEL, "--suite", suite, "--tasks", tasks, "--lengths", str(length), "--samples",
                 str(SAMPLES), "--data-dir", str(data_dir), "--store", str(store), "--device", "cpu"]) == 0
    ours = {(task, idx): (prediction, score) for task, idx, prediction, score in sqlite3.connect(store).execute(
        "SELECT u.task, s.idx, s.prediction, s.score FROM samples s JOIN units u ON u.id = s.unit_id")}
    assert set(ours) == set(stock) and len(ours) == SAMPLES * len(plugins.split(","))
    tokenizer = load_model(MODEL, device="cpu")[1]
    assert sorted(prompts) == sorted(prompt for prompt, _, _ in stock.values())  # the same contexts, so the same ids
    assert sorted(real(tokenizer, p) for p in prompts) == sorted(
        tuple(tokenizer(p)["input_ids"]) for p, _, _ in stock.values())
    for key, (prediction, score) in ours.items():
        if prediction != stock[key][1]:  # S-NIAH's early stop: the row ended once its output scored 1, so ccq-eval's
            # prediction is the start of stock lm-eval's (which decodes the whole budget), with the same score;
            # BABILong's ended at its first full stop, past which its score reads nothing
            assert suite in ("sniah", "multi_niah", "ruler", "babilong") and stock[key][1].startswith(prediction), key
            assert score == 100.0 or suite == "babilong", key
        assert score == pytest.approx(stock[key][2]), key
