"""LongBench: the official scorer on hand-checked cases, middle truncation at an exact token count,
oracles through the whole suite, a tiny model end to end, reference rows and the table."""

import json
import sqlite3

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.suites.longbench import data as longbench
from ccq_eval.run import Evaluand, RunRequest, run_suite
from ccq_eval.suites.longbench.scoring import score as longbench_score
from ccq_eval.suites.longbench.tasks import TASKS
from tests.helpers import byte_tokenizer, save_checkpoint, tiny_model

KEYS = list(TASKS)


def record(key, i):
    answers = {"trec": ["Location"], "lcc": [f"    return value_{i}"], "repobench-p": [f"x = compute({i})"],
               "gov_report": [f"The agency reported {i} findings about budgets."]}.get(key, [f"answer {i} here"])
    return {"input": f"What is item {i}?", "context": f"Some context number {i}. " * (30 + 10 * i),
            "answers": answers, "length": 100, "dataset": key, "language": "en",
            "all_classes": ["Location", "Description", "Entity"] if key == "trec" else None, "_id": f"{key}-{i}"}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("lb")
    (root / "longbench").mkdir()
    for key in KEYS:
        (root / "longbench" / f"{key}.jsonl").write_text("".join(json.dumps(record(key, i)) + "\n" for i in range(3)))
    return root


def test_scorer_hand_checked_cases():
    assert longbench_score("triviaqa", "\n\nParis\nLondon is wrong", ["Paris"], []) == 100.0  # first line, after newlines
    assert longbench_score("narrativeqa", "\n\nParis\nLondon", ["Paris"], []) == pytest.approx(100 * 2 / 3)  # no rule
    assert longbench_score("hotpotqa", "The Eiffel tower", ["eiffel tower"], []) == 100.0  # articles and case
    assert longbench_score("hotpotqa", "tower", ["eiffel tower"], []) == pytest.approx(100 * 2 / 3)
    classes = ["Location", "Description", "Entity", "Abbreviation"]
    assert longbench_score("trec", "Location", ["Location"], classes) == 100.0
    assert longbench_score("trec", "Location or Entity", ["Location"], classes) == 50.0
    assert longbench_score("trec", "Entity\nLocation", ["Location"], classes) == 0.0  # only the first line counts
    # code similarity: the first line that is not empty and not a comment is compared
    assert longbench_score("lcc", "\n# a comment\n// another\nreturn x", ["return x"], []) == 100.0
    assert longbench_score("lcc", "return y", ["return x"], []) == 88.0  # fuzz.ratio rounds 87.5
    assert longbench_score("gov_report", "the cat sat", ["the cat sat"], []) == pytest.approx(100.0, abs=1e-6)
    assert longbench_score("gov_report", "", ["the cat sat"], []) == 0.0


def test_middle_truncation_keeps_first_and_last_halves_at_an_exact_count():
    tok = byte_tokenizer()
    prompt = "A" * 60 + "MIDDLE" * 50 + "Z" * 60
    kept, read, cut = longbench.middle_truncate(tok, prompt, 100)
    assert kept == "A" * 50 + "Z" * 50 and read == 100 and cut == len(prompt) - 100
    assert longbench.middle_truncate(tok, "short", 100) == ("short", 5, 0)


def test_official_prompts_come_through():
    prompt = longbench.render_prompt("hotpotqa", {"context": "CTX", "input": "Q?"})
    assert prompt.startswith("Answer the question based on the given passages.") and "CTX" in prompt
    assert prompt.endswith("Question: Q?\nAnswer:")


class MappingLM:
    """Answers each prompt from a dict (the gold answer), or with nothing."""

    def __new__(cls, answers):
        from lm_eval.api.model import LM

        from tests.oracle import GeneratesOnly

        class _LM(GeneratesOnly, LM):
            def respond(self, prompt):
                return answers.get(prompt, "")

            def loglikelihood(self, requests, disable_tqdm=False):
                raise NotImplementedError

            def loglikelihood_rolling(self, requests, disable_tqdm=False):
                raise NotImplementedError

        return _LM()


def oracle(data_dir, tokenizer_dir, gold: bool):
    def load(request, max_length):
        tok = byte_tokenizer()
        answers = {}
        if gold:
            for key in KEYS:
                for doc in longbench.build(key, longbench.read_records(data_dir / "longbench" / f"{key}.jsonl"), tok, 2048, None)[0]:
                    answers[doc["prompt"]] = doc["answers"][0]
        provenance = {"weights_sha256": f"oracle-{gold}", "config": {"model_type": "oracle"}, "dtype": "none",
                      "device": "cpu", "ccq_overrides": {}, "versions": {"torch": torch.__version__}}
        model = MappingLM(answers)
        return Evaluand(generator=model, lm=model, tokenizer=tok, tokenizer_path=str(tokenizer_dir), provenance=provenance)
    return load


@pytest.mark.parametrize("gold,expected", [(True, 100.0), (False, 0.0)])
def test_oracles_score_100_and_0_on_every_task(data_dir, tmp_path, gold, expected):
    tokdir = tmp_path / "tok"
    byte_tokenizer().save_pretrained(tokdir)
    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="longbench", lengths="2k", store=str(store), data_dir=str(data_dir),
                         label="oracle")
    assert run_suite(request, oracle(data_dir, tokdir, gold), out=lambda *_: None) == 0
    rows = sqlite3.connect(store).execute("SELECT task, value FROM metrics WHERE metric = 'score'").fetchall()
    assert len(rows) == 14 and all(value == pytest.approx(expected) for _, value in rows)


@pytest.mark.e2e
def test_tiny_model_end_to_end_with_truncation_and_table(data_dir, tmp_path, capsys):
    torch.manual_seed(0)
    model_dir = save_checkpoint(tiny_model("ccq_gla"), tmp_path / "tiny")
    store = tmp_path / "s.db"
    code = main(["--model", str(model_dir), "--suite", "longbench", "--tasks", "trec,lcc,hotpotqa",
                 "--lengths", "600", "--data-dir", str(data_dir), "--store", str(store), "--device", "cpu"])
    assert code == 0
    db = sqlite3.connect(store)
    settings = {t: json.loads(s) for t, s in db.execute("SELECT task, settings FROM units")}
    assert settings["longbench_trec"]["truncated_prompts"] >= 1  # the long contexts exceed 600 - 64 tokens
    fields = [json.loads(f) for (f,) in db.execute("SELECT fields FROM samples")]
    assert all(f["prompt_tokens"] <= 600 - 32 for f in fields) and any(f["truncated_tokens"] > 0 for f in fields)
    capsys.readouterr()
    assert main(["tables", "--table", "longbench", "--store", str(store), "--reference", "--out", str(tmp_path / "t")]) == 0
    md = (tmp_path / "t" / "longbench.md").read_text()
    assert "tiny" in md and "Gated DeltaNet \\[GDN paper (ICLR 2025)\\] (reported)" in md and "Avg (reported)" in md


def test_reference_rows_render_without_measured_rows_and_keep_both_averages(tmp_path):
    from ccq_eval.catalogue import render_table
    from ccq_eval.store import Store

    rendered = render_table(Store(tmp_path / "empty.db"), "longbench", reference=True)
    lines = rendered["csv"].splitlines()
    assert lines[0].endswith("RBP,Avg,Avg (reported)")
    mamba = next(line for line in lines if line.startswith("Mamba2"))
    values = mamba.split(",")
    assert float(values[-1]) == 13.5 and float(values[-2]) == pytest.approx(13.3, abs=0.05)  # reported vs plain mean


def test_missing_data_offline(tmp_path, capsys):
    torch.manual_seed(0)
    model_dir = save_checkpoint(tiny_model("gla"), tmp_path / "m")
    capsys.readouterr()
    code = main(["--model", str(model_dir), "--suite", "longbench", "--store", str(tmp_path / "s.db"), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "ccq-eval data fetch longbench" in err and "narrativeqa" in err and "\n" not in err


def test_records_are_parsed_once_and_prompts_truncated_once_per_unit(data_dir, tmp_path, monkeypatch):
    """The driver builds each unit's prompts once, freezes them and hands them to lm-eval in process
    (before the redesign: three parses and two truncations per unit)."""
    from ccq_eval.suites.longbench import data as lb_data

    parsed, truncated = [], []
    real_read, real_cut = lb_data.read_records, lb_data.middle_truncate
    monkeypatch.setattr(lb_data, "read_records", lambda path: parsed.append(path.name) or real_read(path))
    monkeypatch.setattr(lb_data, "middle_truncate", lambda *a: truncated.append(1) or real_cut(*a))
    tokdir = tmp_path / "tok"
    byte_tokenizer().save_pretrained(tokdir)
    request = RunRequest(model="oracle", suite="longbench", tasks="trec,qasper", lengths="1k,2k", store=str(tmp_path / "s.db"),
                         data_dir=str(data_dir), label="oracle")
    assert run_suite(request, oracle(data_dir, tokdir, False), out=lambda *_: None) == 0
    assert sorted(parsed) == ["qasper.jsonl", "trec.jsonl"]
    assert len(truncated) == 2 * 2 * 3  # tasks x lengths x records


def test_a_tokenizer_without_an_eos_token_runs(data_dir, tmp_path):
    """A BPE with its own BOS and no EOS: the stop strings are the task's alone (there was a TypeError)."""
    from tests.fixtures.ruler.make_fixtures import subword_tokenizer_with_bos

    tokenizer = subword_tokenizer_with_bos()
    assert tokenizer.eos_token_id is None
    folder = save_checkpoint(tiny_model("gla", vocab_size=len(tokenizer)), tmp_path / "m", tokenizer)
    store = tmp_path / "s.db"
    assert main(["--model", str(folder), "--suite", "longbench", "--tasks", "hotpotqa", "--lengths", "400",
                 "--data-dir", str(data_dir), "--device", "cpu", "--store", str(store)]) == 0
    assert sqlite3.connect(store).execute("SELECT status FROM units").fetchall() == [("complete",)]
