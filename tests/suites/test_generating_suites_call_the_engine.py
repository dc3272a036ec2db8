"""The generating suites call the evaluated model's `generate` themselves: lm-eval is not called in process during an
S-NIAH, multi-needle, RULER, recall or LongBench run (a spy on `simple_evaluate` and on the model's
`generate_until`), and every sample's prompt reaches the model once."""

from __future__ import annotations

import json

import lm_eval
import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.run import RunRequest, run_suite
from tests.oracle import AnswersFromPrompt, answers_loader, stored_units


def longbench_data(root):
    from ccq_eval.suites.longbench.tasks import TASKS

    (root / "longbench").mkdir()
    for key in ("trec", "qasper"):
        rows = [{"input": f"What is item {i}?", "context": f"Some context number {i}. " * 30, "answers": ["Location"],
                 "length": 100, "dataset": key, "language": "en", "all_classes": ["Location", "Entity"],
                 "_id": f"{key}-{i}"} for i in range(3)]
        assert key in TASKS
        (root / "longbench" / f"{key}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.mark.parametrize("suite,tasks,lengths,data", [
    ("sniah", "1,3", "1k", None), ("multi_niah", "niah_multikey_2", "1k", None),
    ("ruler", "ruler_vt,ruler_qa_squad", "4k", "shipped"), ("recall", "recall_nq,recall_swde", "1k", "shipped"),
    ("longbench", "trec,qasper", "1k", "longbench")])
def test_no_generating_suite_calls_lm_eval(suite, tasks, lengths, data, tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(lm_eval, "simple_evaluate", lambda **_: pytest.fail("lm-eval called in process"))
    monkeypatch.setattr(AnswersFromPrompt, "generate_until", lambda *_: pytest.fail("generate_until called"))
    prompts = []
    data_dir = {"shipped": str(SHIPPED_RECORDS), "longbench": str(longbench_data(tmp_path)) if data else None,
                None: None}[data]
    request = RunRequest(model="scripted", suite=suite, tasks=tasks, lengths=lengths, samples=3,
                         store=str(tmp_path / "s.db"), data_dir=data_dir, label="scripted")
    assert run_suite(request, answers_loader("scripted", lambda p: prompts.append(p) or " answer"),
                     out=lambda *_: None) == 0
    metrics, samples = stored_units(tmp_path / "s.db")
    assert len(samples) == len(prompts) > 0 and len(set(prompts)) == len(prompts)
    assert {task for task, *_ in samples} == {t if "_" in t else {"sniah": f"sniah_{t}", "longbench": f"longbench_{t}"}
                                             [suite] for t in tasks.split(",")}
