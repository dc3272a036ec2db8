"""The zoo's training logs are kept gzipped with a summary table that is current, and compressing keeps every step."""

import json
from pathlib import Path

from ccq_eval import zoo_logs

LOGS = Path(__file__).resolve().parents[2] / "results" / "zoo-training"


def test_the_committed_summary_is_the_one_the_logs_give():
    assert (LOGS / "README.md").read_text() == zoo_logs.summary(LOGS)
    assert not list(LOGS.rglob("*.jsonl"))  # every log compressed


def test_compressing_a_log_keeps_every_step_and_gives_the_same_bytes_twice(tmp_path):
    steps = [{"step": i, "loss": 5.0 / i, "answer_loss": 2.0 / i, "lr": 1e-3} for i in range(1, 1300)]
    text = "".join(json.dumps(s) + "\n" for s in steps)
    first, second = tmp_path / "a", tmp_path / "b"
    for folder in (first, second):
        (folder / "not-shipped").mkdir(parents=True)
        (folder / "m.jsonl").write_text(text)
        (folder / "not-shipped" / "n.jsonl").write_text(text)
        zoo_logs.main([str(folder)])
    assert zoo_logs.read_log(first / "m.jsonl.gz") == steps
    assert (first / "m.jsonl.gz").read_bytes() == (second / "m.jsonl.gz").read_bytes()
    summary = (first / "README.md").read_text()
    assert "| m | 1,299 |" in summary and "| n | 1,299 |" in summary and "## Not shipped" in summary
    assert f"{2.0 / 1200:.3f}" in summary.split("| m |")[1].splitlines()[0]
