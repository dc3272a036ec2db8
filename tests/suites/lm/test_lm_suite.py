"""The lm suite: lm-eval's own zero-shot tasks on fixture records in each dataset's format, end to
end on a tiny model into the store and the table; the offline error; --suite all."""

import json
import sqlite3

import pytest
import torch

from ccq_eval.cli import main
from tests.helpers import save_checkpoint, tiny_model

FIXTURES = {
    "wikitext": [{"page": " = Valkyria = \n The game began development in 2010 , carrying over a large portion . \n"},
                 {"page": " = Tower = \n The tower is 300 m tall and was built in 1889 . \n"}],
    "lambada_openai": [{"text": "She opened the door and saw her old friend standing in the rain"},
                       {"text": "He picked up the phone and called his mother"}],
    "piqa": [{"goal": "To boil water", "sol1": "heat it in a pot", "sol2": "put it in the freezer", "label": 0},
             {"goal": "To dry hands", "sol1": "wet them", "sol2": "use a towel", "label": 1}],
    "hellaswag": [{"ctx_a": "A man is standing in a kitchen.", "ctx_b": "he", "activity_label": "Cooking",
                   "endings": ["cracks an egg.", "flies away.", "sings.", "sleeps."], "label": "0"},
                  {"ctx_a": "A girl holds a ball.", "ctx_b": "she", "activity_label": "Playing",
                   "endings": ["eats it.", "throws it.", "reads it.", "paints it."], "label": "1"}],
    "winogrande": [{"sentence": "The cup fell off the table because _ was slippery.", "option1": "the cup",
                    "option2": "the table", "answer": "1"},
                   {"sentence": "Sam gave Tom a gift because _ was kind.", "option1": "Sam", "option2": "Tom",
                    "answer": "1"}],
    "arc_easy": [{"question": "What do plants need?", "choices": {"text": ["light", "rocks"], "label": ["A", "B"]},
                  "answerKey": "A"}],
    "arc_challenge": [{"question": "Which is a gas?", "choices": {"text": ["ice", "steam", "wood"],
                                                                  "label": ["A", "B", "C"]}, "answerKey": "B"}],
    "social_iqa": [{"context": "Alex helped a friend move.", "question": "How would the friend feel?",
                    "answerA": "grateful", "answerB": "angry", "answerC": "bored", "label": "1"}],
    "boolq": [{"passage": "The sun is a star.", "question": "is the sun a star", "label": 1},
              {"passage": "Cats are mammals.", "question": "are cats birds", "label": 0}],
}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("lmdata")
    (root / "lm").mkdir()
    for task, rows in FIXTURES.items():
        (root / "lm" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return root


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("gla"), tmp_path_factory.mktemp("m") / "tiny-gla")


@pytest.mark.e2e
def test_lm_suite_end_to_end_into_store_and_table(model_dir, data_dir, tmp_path, capsys):
    store = tmp_path / "s.db"
    assert main(["--model", str(model_dir), "--suite", "lm", "--data-dir", str(data_dir), "--store", str(store),
                 "--device", "cpu", "--lengths", "1k"]) == 0  # --lengths is ignored by the lm suite
    db = sqlite3.connect(store)
    rows = {(t, m): (v, n, L) for t, m, v, n, L in db.execute(
        "SELECT task, metric, value, n, context_length FROM metrics")}
    assert len({t for t, _ in rows}) == 9 and all(L == 2048 for *_, L in rows.values())
    assert rows[("piqa", "acc")][1] == 2 and rows[("arc_challenge", "acc_norm")][1] == 1
    for (task, metric), (value, *_) in rows.items():
        if metric in ("acc", "acc_norm"):
            assert value in {0.0, 50.0, 100.0} or 0 <= value <= 100  # x100 percentages
        else:
            assert value > 10  # a random byte-level model is far from a real LM
    capsys.readouterr()
    assert main(["tables", "--table", "lm", "--store", str(store), "--reference", "--out", str(tmp_path / "t")]) == 0
    csv = (tmp_path / "t" / "lm.csv").read_text().splitlines()
    assert csv[0] == ("label,family,Wiki ppl,LMB ppl,LMB acc,PIQA,Hella,Wino,ARC-e,ARC-c,SIQA,BoolQ,Avg (8),"
                      "Avg (reported)")
    tiny = next(line for line in csv if line.startswith("tiny-gla")).split(",")
    assert tiny[1] == "GLA"
    accuracies = [float(x) for x in tiny[4:12]]
    assert float(tiny[12]) == pytest.approx(sum(accuracies) / 8, abs=1e-3)
    assert main(["tables", "--table", "lm", "--store", str(store), "--average", "piqa,boolq",
                 "--out", str(tmp_path / "t2")]) == 0
    assert "Avg (2)" in (tmp_path / "t2" / "lm.csv").read_text()
    # --average is the lm table's own: under --table all only it reads it; another table refuses it in one line
    assert main(["tables", "--store", str(store), "--average", "piqa,boolq", "--out", str(tmp_path / "t3")]) == 0
    assert "Avg (2)" in (tmp_path / "t3" / "lm.csv").read_text()
    capsys.readouterr()
    assert main(["tables", "--table", "sniah", "--store", str(store), "--average", "piqa", "--out",
                 str(tmp_path / "t4")]) == 2
    err = capsys.readouterr().err.strip()
    assert "--average: the sniah table does not take it; it is for the lm table" in err and "\n" not in err
    assert not (tmp_path / "t4").exists()


def test_missing_zero_shot_data_offline(model_dir, tmp_path, capsys):
    code = main(["--model", str(model_dir), "--suite", "lm", "--tasks", "piqa,boolq", "--store", str(tmp_path / "s.db"),
                 "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "piqa (baber/piqa)" in err and "ccq-eval data fetch lm" in err and "\n" not in err
    assert not (tmp_path / "s.db").exists()


def test_suite_all_refuses_task_subsets(model_dir, tmp_path, capsys):
    code = main(["--model", str(model_dir), "--suite", "all", "--tasks", "piqa", "--store", str(tmp_path / "s.db")])
    assert code == 2 and "--suite all runs every suite" in capsys.readouterr().err


@pytest.mark.e2e
def test_suite_all_runs_every_suite_in_one_run_record(model_dir, data_dir, tmp_path, monkeypatch):
    """Every suite with its defaults (one sample each), one run record, every unit complete."""
    import random

    from tests.suites.longbench.test_longbench import KEYS, record

    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    rng = random.Random(0)
    (data_dir / "longppl").mkdir(exist_ok=True)
    for corpus in ("govreport", "qmsum", "narrativeqa", "qasper", "codeparrot", "pg19"):
        text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(5000))
        (data_dir / "longppl" / f"{corpus}.jsonl").write_text(json.dumps({"text": text}) + "\n")
    (data_dir / "longbench").mkdir(exist_ok=True)
    for key in KEYS:
        (data_dir / "longbench" / f"{key}.jsonl").write_text(json.dumps(record(key, 0)) + "\n")
    store = tmp_path / "s.db"
    assert main(["--model", str(model_dir), "--suite", "all", "--samples", "1", "--data-dir", str(data_dir),
                 "--store", str(store), "--device", "cpu"]) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    suites = dict(db.execute("SELECT suite, COUNT(*) FROM units WHERE status = 'complete' GROUP BY suite"))
    assert suites == {"lm": 9, "sniah": 12, "longppl": 54, "longbench": 14}


def test_the_lm_suite_keeps_its_own_2048_window_whatever_the_run_builds(model_dir, tmp_path, monkeypatch):
    """--suite all builds one wrapper with the run's longest length (20,480); wikitext's rolling
    perplexity must still use lm-eval's 2048-token windows, as the unit's settings say."""
    from ccq_eval.run import RunRequest, load_evaluand, run_suite

    root = tmp_path / "data"
    (root / "lm").mkdir(parents=True)
    page = " = Long = \n" + "".join(f" The {i}th tower was built in {1800 + i} near the river . \n" for i in range(120))
    assert len(page) > 3 * 2048  # bytes = tokens: several 2048-token windows
    (root / "lm" / "wikitext.jsonl").write_text(json.dumps({"page": page}) + "\n")

    def word_perplexity(loader, name):
        store = tmp_path / f"{name}.db"
        request = RunRequest(model=str(model_dir), suite="lm", tasks="wikitext", store=str(store), data_dir=str(root),
                             device="cpu", label=name)
        assert run_suite(request, loader, out=lambda *_: None) == 0
        db = sqlite3.connect(store)
        settings = json.loads(db.execute("SELECT settings FROM units").fetchone()[0])
        assert settings["max_length"] == 2048
        return db.execute("SELECT value FROM metrics WHERE metric = 'word_perplexity'").fetchone()[0]

    alone = word_perplexity(load_evaluand, "alone")
    in_all = word_perplexity(lambda request, _: load_evaluand(request, 20480), "in-all")
    assert in_all == pytest.approx(alone, rel=1e-9)
    import contextlib

    from ccq_eval.lm.wrapper import CCQEvalLM

    monkeypatch.setattr(CCQEvalLM, "budget", lambda self, length: contextlib.nullcontext())  # the old behaviour
    assert abs(word_perplexity(lambda request, _: load_evaluand(request, 20480), "wide") / alone - 1) > 1e-5


@pytest.mark.parametrize("task", sorted(FIXTURES))
def test_every_fixture_is_read_as_its_task_reads_it(data_dir, task):
    from ccq_eval.suites.lm.data import check_records

    check_records(task, data_dir / "lm" / f"{task}.jsonl")  # raises on any record the task cannot read


@pytest.mark.parametrize("task,rows,fragment", [
    ("piqa", [{k: v for k, v in r.items() if k != "sol2"} for r in FIXTURES["piqa"]], "(fields goal, label, sol1)"),
    ("piqa", [FIXTURES["piqa"][0], {k: v for k, v in FIXTURES["piqa"][1].items() if k != "goal"}],
     "line 2 has other fields than the first line (goal)"),
    ("hellaswag", [{k: v for k, v in r.items() if k != "endings"} for r in FIXTURES["hellaswag"]], "KeyError: 'endings'"),
    ("arc_easy", [{"question": "q", "answerKey": "A"}], "'choices' is undefined"),
    ("boolq", [{"passage": "p", "label": 1}], "'question' is undefined"),
])
def test_records_missing_a_field_are_refused_before_the_model_loads(model_dir, tmp_path, capsys, task, rows, fragment):
    """A field the task reads, absent from every record or from one (datasets would fill it with None): one line
    naming the file, exit 2, no store."""
    (tmp_path / "d" / "lm").mkdir(parents=True)
    (tmp_path / "d" / "lm" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "s.db"
    code = main(["--model", str(model_dir), "--suite", "lm", "--tasks", task, "--data-dir", str(tmp_path / "d"),
                 "--store", str(store), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and fragment in err and f"{task}.jsonl" in err and "\n" not in err, err
    assert not store.exists()


def test_a_unit_that_scored_fewer_samples_than_asked_says_so(model_dir, data_dir, tmp_path, capsys):
    assert main(["--model", str(model_dir), "--suite", "lm", "--tasks", "piqa", "--samples", "1000", "--data-dir",
                 str(data_dir), "--store", str(tmp_path / "s.db"), "--device", "cpu"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("piqa"))
    assert "(2 of the 1,000 samples asked for: the data holds no more)" in line, line
