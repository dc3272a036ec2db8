"""Based / JRT's real-world recall tasks (lm-eval's own swde, fda, squad_completion: Python tasks with their own
classes) in the lm suite, on local records: read as lm-eval's classes read them, scored by their own "contains"
metric, stored x100, shown in the lm table only when run, and never in the default task list."""

import json
import sqlite3

import pytest
from lm_eval.api.model import LM

from ccq_eval.cli import main
from ccq_eval.run import Evaluand, RunRequest, run_suite
from ccq_eval.suites import SUITES
from tests.oracle import GeneratesOnly

TASKS = ("swde", "fda", "squad_completion")
RECORDS = {task: [{"text": f"{task} page {i}. The {kind} of item {i} is", "value": f"answer-{task}-{i}"}
                  for i in range(4)] for task, kind in zip(TASKS, ("price", "date", "capital"))}


class LookupLM(GeneratesOnly, LM):
    """Answers the first ``right`` prompts of each task with their value, the others with another value."""

    def __init__(self, right: int):
        super().__init__()
        self.right, self.requests = right, []

    def generate_until(self, requests, disable_tqdm: bool = False):
        out = []
        for request in requests:
            context, settings = request.args
            self.requests.append((context, settings))
            task, index = next((t, i) for t, rows in RECORDS.items() for i, r in enumerate(rows) if r["text"] == context)
            out.append(f" {RECORDS[task][index]['value'].upper() if index < self.right else 'unknown'}\n")
        return out

    def loglikelihood(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError

    def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
        raise NotImplementedError


@pytest.fixture
def data_dir(tmp_path):
    (tmp_path / "data" / "lm").mkdir(parents=True)
    for task, rows in RECORDS.items():
        (tmp_path / "data" / "lm" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tmp_path / "data"


def test_the_recall_tasks_run_from_local_records_with_lm_evals_own_classes(data_dir, tmp_path):
    from tests.helpers import byte_tokenizer

    model = LookupLM(right=3)

    def load(request, max_length):
        provenance = {"weights_sha256": "lookup", "config": {"model_type": "lookup"}, "dtype": "none", "device": "cpu",
                      "ccq_overrides": {}, "versions": {}}
        return Evaluand(generator=model, lm=model, tokenizer=byte_tokenizer(), tokenizer_path=str(tmp_path), provenance=provenance)

    store = tmp_path / "s.db"
    request = RunRequest(model="lookup", suite="lm", tasks=",".join(TASKS), data_dir=str(data_dir), store=str(store),
                         label="lookup")
    assert run_suite(request, load, out=lambda *_: None) == 0
    rows = {(t, m): v for t, m, v in sqlite3.connect(store).execute("SELECT task, metric, value FROM metrics")}
    assert rows == {(task, "contains"): 75.0 for task in TASKS}  # 3 of 4 contain the value (case-insensitive)
    prompts = {context for context, _ in model.requests}
    assert prompts == {r["text"] for rows in RECORDS.values() for r in rows}  # lm-eval's doc_to_text: the text
    by_task = {next(t for t, rows in RECORDS.items() if any(r["text"] == c for r in rows)): s for c, s in model.requests}
    assert by_task["swde"] == by_task["fda"] == {"until": ["\n"], "max_gen_toks": 48}  # their classes' own requests
    # squad_completion's class takes lm-eval's default generation_kwargs first (its 48 / "\n" only where unset)
    assert by_task["squad_completion"]["max_gen_toks"] == 256 and by_task["squad_completion"]["until"] == ["\n\n"]
    assert main(["tables", "--table", "lm", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    header = (tmp_path / "t" / "lm.csv").read_text().splitlines()[0].split(",")
    assert header[-3:] == ["SWDE", "FDA", "SQuAD"]


def test_they_are_not_in_the_default_list_and_a_record_without_its_field_is_refused(data_dir, tmp_path, capsys):
    suite = SUITES["lm"]
    assert not set(TASKS) & set(suite.tasks) and set(TASKS) <= set(suite.all_tasks)
    (data_dir / "lm" / "fda.jsonl").write_text(json.dumps({"text": "no value here"}) + "\n")
    code = main(["--model", "zoo:gla-tiny", "--suite", "lm", "--tasks", "fda", "--data-dir", str(data_dir),
                 "--store", str(tmp_path / "s.db")])
    err = capsys.readouterr().err
    assert code == 2 and "fda.jsonl" in err and "value" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "s.db").exists()


def test_the_fetch_names_their_hub_datasets():
    from ccq_eval.suites.lm.data import dataset_of

    assert dataset_of("swde") == ("hazyresearch/based-swde-v2", "default", "validation")
    assert dataset_of("fda")[0] == "hazyresearch/based-fda" and dataset_of("squad_completion")[0] == "hazyresearch/based-squad"
    assert set(TASKS) <= set(SUITES["lm"].fetcher.names())
