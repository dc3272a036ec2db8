"""lm-eval's results layout in and out of the store, on files stock lm-eval wrote in the test: lm-eval's own piqa
and boolq tasks (their YAMLs, reading local records instead of the hub), run through ``ccq-eval lm-eval`` with
``--output_path --log_samples``."""

import json
import math
import sqlite3
from pathlib import Path

import pytest

from ccq_eval.cli import main

REPO = Path(__file__).resolve().parents[2]
RECORDS = {
    "piqa": [{"goal": "To boil water", "sol1": "heat it in a pot", "sol2": "put it in the freezer", "label": 0},
             {"goal": "To dry hands", "sol1": "wet them", "sol2": "use a towel", "label": 1},
             {"goal": "To cut bread", "sol1": "use a knife", "sol2": "use a spoon", "label": 0}],
    "boolq": [{"passage": "The sun is a star.", "question": "is the sun a star", "label": 1},
              {"passage": "Cats are mammals.", "question": "are cats birds", "label": 0}],
}


OWN_YAML = {"piqa": "piqa/piqa.yaml", "boolq": "super_glue/boolq/default.yaml"}  # under lm_eval/tasks/


def local_task_yaml(task: str, data: Path) -> str:
    """lm-eval's own YAML for ``task`` with its dataset read from a local JSON-lines file (and no tag, so the
    built-in task's group does not pull the hub copy in)."""
    import lm_eval

    own = Path(lm_eval.__file__).parent / "tasks" / OWN_YAML[task]
    kept = [line for line in own.read_text().splitlines()
            if not line.startswith(("dataset_path", "dataset_name", "training_split", "tag", "  - super-glue"))]
    return "\n".join(kept + ["dataset_path: json", "dataset_kwargs:", "  data_files:",
                             f"    validation: {data}"]) + "\n"


@pytest.fixture(scope="module")
def lm_eval_output(tmp_path_factory):
    root = tmp_path_factory.mktemp("lm-eval")
    include = root / "tasks"
    include.mkdir()
    for task, rows in RECORDS.items():
        (root / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        (include / f"{task}.yaml").write_text(local_task_yaml(task, root / f"{task}.jsonl"))
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    try:
        assert main(["lm-eval", "run", "--model", "hf", "--model_args", "pretrained=zoo:gla-tiny,dtype=float32",
                     "--tasks", "piqa,boolq", "--include_path", str(include), "--device", "cpu", "--batch_size", "1",
                     "--output_path", str(root / "out"), "--log_samples"]) == 0
    finally:
        mp.undo()
    (results,) = (root / "out").rglob("results_*.json")
    return results


def stored_metrics(store: Path) -> dict:
    rows = sqlite3.connect(store).execute("SELECT task, metric, value, stderr, n, label FROM metrics").fetchall()
    return {(task, metric): (value, stderr, n, label) for task, metric, value, stderr, n, label in rows}


@pytest.mark.e2e
def test_lm_eval_results_come_in_as_lm_units_in_percent(lm_eval_output, tmp_path, capsys):
    written = json.loads(lm_eval_output.read_text())
    store = tmp_path / "s.db"
    assert main(["ingest", str(lm_eval_output.parent.parent), "--store", str(store)]) == 0
    assert "2 units added" in capsys.readouterr().out
    metrics = stored_metrics(store)
    assert set(metrics) == {("piqa", "acc"), ("piqa", "acc_norm"), ("boolq", "acc")}
    for (task, metric), (value, stderr, n, label) in metrics.items():
        assert math.isclose(value, 100 * written["results"][task][f"{metric},none"])
        assert math.isclose(stderr, 100 * written["results"][task][f"{metric}_stderr,none"])
        assert n == len(RECORDS[task]) and label == "gla-tiny"
    db = sqlite3.connect(store)
    run = db.execute("SELECT model_spec, versions, weights_sha256, model_config FROM runs").fetchone()
    versions = json.loads(run[1])
    assert versions["lm_eval"] == written["lm_eval_version"] and versions["task_versions"] == written["versions"]
    from ccq_eval.models.loading import weights_sha256

    folder = Path(run[0])  # the zoo folder: identified by its weights, as ccq-eval's own runs identify it
    assert run[2] == weights_sha256(sorted(folder.glob("*.safetensors")))
    assert json.loads(run[3])["model_type"] == "gla"
    samples = db.execute("SELECT u.task, COUNT(*), SUM(s.score) FROM samples s JOIN units u ON u.id = s.unit_id "
                         "GROUP BY u.task").fetchall()
    assert {task: count for task, count, _ in samples} == {t: len(r) for t, r in RECORDS.items()}
    for task, count, total in samples:  # the per-document scores average to lm-eval's number
        primary = {"piqa": "acc", "boolq": "acc"}[task]
        assert math.isclose(total / count, written["results"][task][f"{primary},none"])
    assert main(["tables", "--store", str(store), "--table", "lm", "--out", str(tmp_path / "t")]) == 0
    assert "gla-tiny" in capsys.readouterr().out
    assert main(["ingest", str(lm_eval_output), "--store", str(store)]) == 0  # the same file again: nothing new
    assert "2 already here" in capsys.readouterr().out
    assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1


@pytest.mark.e2e
def test_an_exported_run_reads_back_as_lm_eval_wrote_it(lm_eval_output, tmp_path, capsys):
    written = json.loads(lm_eval_output.read_text())
    store = tmp_path / "s.db"
    assert main(["ingest", str(lm_eval_output), "--store", str(store)]) == 0
    (run_id,) = sqlite3.connect(store).execute("SELECT id FROM runs").fetchone()
    assert main(["export", run_id, "--format", "lm-eval", "--store", str(store), "--out", str(tmp_path / "x")]) == 0
    (exported,) = (tmp_path / "x").rglob("results_*.json")
    again = json.loads(exported.read_text())
    for task, numbers in written["results"].items():
        for key, value in numbers.items():
            if key.endswith(",none"):
                assert math.isclose(again["results"][task][key], value), (task, key)
    assert again["versions"] == written["versions"] and again["n-samples"] == written["n-samples"]
    for task in RECORDS:
        lines = next((tmp_path / "x").rglob(f"samples_{task}_*.jsonl")).read_text().splitlines()
        assert len(lines) == len(RECORDS[task])
    fresh = tmp_path / "fresh.db"  # and the export ingests to the same numbers
    assert main(["ingest", str(exported), "--store", str(fresh)]) == 0
    assert {k: v[:3] for k, v in stored_metrics(fresh).items()} == {k: v[:3] for k, v in stored_metrics(store).items()}


def test_a_length_suite_exports_as_lm_evals_ruler_tasks_name_their_lengths(tmp_path):
    """The old-store fixture's S-NIAH run: per length, "<L>,none" holds the primary metric."""
    import shutil

    store = tmp_path / "old.db"
    shutil.copy(REPO / "tests" / "fixtures" / "store_v1" / "store.db", store)
    db = sqlite3.connect(store)
    run_id, value = db.execute("SELECT run_id, value FROM metrics WHERE task = 'sniah_1' AND is_primary = 1 "
                               "ORDER BY rowid LIMIT 1").fetchone()
    assert main(["export", run_id, "--format", "lm-eval", "--store", str(store), "--out", str(tmp_path / "x")]) == 0
    results = json.loads(next((tmp_path / "x").rglob("results_*.json")).read_text())["results"]
    assert results["sniah_1"]["1024,none"] == results["sniah_1"]["score@1024,none"] == value


@pytest.mark.parametrize("content,said", [
    ("{not json", "not readable as JSON"),
    ('{"results": {}}', "not an lm-eval results file"),
    ('{"results": {"piqa": {"acc,none": NaN, "acc_norm,none": 0.5}}, "config": {"model_args": {"pretrained": "x"}}}',
     "piqa acc,none = nan is not a finite number"),
])
def test_a_damaged_results_file_is_refused_and_writes_nothing(content, said, tmp_path, capsys):
    bad = tmp_path / "results_bad.json"
    bad.write_text(content)
    store = tmp_path / "s.db"
    assert main(["ingest", str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and not store.exists()


def test_stores_and_lm_eval_results_are_ingested_by_separate_commands(lm_eval_output, tmp_path, capsys):
    other = tmp_path / "other.db"
    sqlite3.connect(other).close()
    assert main(["ingest", str(lm_eval_output), str(other), "--store", str(tmp_path / "s.db")]) == 2
    assert "each kind in its own command" in capsys.readouterr().err


def test_exporting_an_unknown_run_names_it(tmp_path, capsys):
    import shutil

    store = tmp_path / "old.db"
    shutil.copy(REPO / "tests" / "fixtures" / "store_v1" / "store.db", store)
    assert main(["export", "no-such-run", "--format", "lm-eval", "--store", str(store), "--out", str(tmp_path)]) == 2
    assert "no-such-run" in capsys.readouterr().err


PLUGIN_TASKS = "sniah_1,niah_multikey_2,longppl_essays,longbench_qasper"
PLUGIN_METADATA = {"max_seq_lengths": [1024, 2048], "num_samples": 2,
                   "data_dir": str(REPO / "tests" / "fixtures" / "store_v1" / "data")}


@pytest.fixture(scope="module")
def plugin_output(tmp_path_factory):
    """The task plugins run by lm-eval's own CLI (fla registered) at two lengths, samples logged."""
    root = tmp_path_factory.mktemp("plugins")
    mp = pytest.MonkeyPatch()
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("CCQ_EVAL_CACHE", str(root / "cache"))
    try:
        assert main(["lm-eval", "run", "--model", "hf", "--model_args", "pretrained=zoo:gla-tiny,dtype=float32",
                     "--tasks", PLUGIN_TASKS, "--metadata", json.dumps(PLUGIN_METADATA), "--device", "cpu",
                     "--batch_size", "1", "--output_path", str(root / "out"), "--log_samples"]) == 0
    finally:
        mp.undo()
    (results,) = (root / "out").rglob("results_*.json")
    return results


@pytest.mark.e2e
def test_the_plugins_report_one_number_per_length_in_stock_lm_eval(plugin_output):
    results = json.loads(plugin_output.read_text())["results"]
    for task in PLUGIN_TASKS.split(","):
        numbers = results[task]
        assert isinstance(numbers["1024,none"], float) and isinstance(numbers["2048,none"], float), (task, numbers)
        assert numbers["1024,none"] != -1 and numbers["2048,none"] != -1
        assert numbers["4096,none"] == -1  # a reported length this run did not ask for, as lm-eval's RULER says
    essays = results["longppl_essays"]
    assert essays["2048,none"] != essays["1024,none"]  # two lengths, two numbers (not their pool)
    pooled = essays["perplexity,none"]
    assert min(essays["1024,none"], essays["2048,none"]) <= pooled <= max(essays["1024,none"], essays["2048,none"])


@pytest.mark.e2e
def test_per_length_plugin_results_ingest_into_their_suites_units_and_tables(plugin_output, tmp_path, capsys):
    from ccq_eval.store import Store

    data = json.loads(plugin_output.read_text())["results"]
    store = tmp_path / "s.db"
    assert main(["ingest", str(plugin_output), "--store", str(store), "--label", "lm-eval gla"]) == 0
    assert "8 units added" in capsys.readouterr().out
    units = {(u.suite, u.task, u.context_length): u for u in Store(store, readonly=True).reads.units()}
    assert set(units) == {(s, t, L) for s, t in (("sniah", "sniah_1"), ("multi_niah", "niah_multikey_2"),
                                                  ("longppl", "longppl_essays"), ("longbench", "longbench_qasper"))
                          for L in (1024, 2048)}
    read = Store(store, readonly=True)
    for (suite, task, length), unit in units.items():
        (metric,) = read.reads.metrics(unit.id)
        assert metric.value == data[task][f"{length},none"] and metric.is_primary and metric.label == "lm-eval gla"
        assert len(read.reads.samples(unit.id)) == 2  # the logged samples of that length
    assert main(["tables", "--table", "sniah", "--store", str(store), "--out", str(tmp_path / "t"),
                 "--format", "csv"]) == 0
    row = (tmp_path / "t" / "sniah.csv").read_text().splitlines()[1].split(",")
    assert row[0] == "lm-eval gla" and [float(x) for x in row[-2:]] == [data["sniah_1"]["1024,none"],
                                                                      data["sniah_1"]["2048,none"]]
    assert main(["ingest", str(plugin_output), "--store", str(store), "--label", "lm-eval gla"]) == 0
    assert "nothing new" in capsys.readouterr().out  # the same file twice adds nothing
    # rescore names what it cannot re-score as what it is: lm-eval's results hold no frozen records
    assert main(["rescore", "--suite", "sniah", "--store", str(store)]) == 1
    left = capsys.readouterr().err.strip().splitlines()
    assert len(left) == 2 and all("ingested from lm-eval's results" in line for line in left)
    assert not any("ccq-eval run --force" in line for line in left)


@pytest.mark.e2e
def test_lm_evals_own_ruler_task_of_the_same_name_is_left_out(plugin_output, tmp_path, capsys):
    """niah_multikey_2 is RULER's name, which lm-eval's port uses too: a results file from lm-eval's own task (its
    config without the plugin's dataset_kwargs) is not ingested as this suite's data."""
    from ccq_eval.store import Store

    data = json.loads(plugin_output.read_text())
    data["configs"]["niah_multikey_2"]["dataset_kwargs"] = {}
    theirs = tmp_path / plugin_output.name
    theirs.write_text(json.dumps(data))
    assert main(["ingest", str(theirs), "--store", str(tmp_path / "s.db"), "--label", "x"]) == 0
    assert "lm-eval's own RULER task" in capsys.readouterr().out
    assert "multi_niah" not in {u.suite for u in Store(tmp_path / "s.db", readonly=True).reads.units()}


def edited_copy(results: Path, into: Path, edit=None, edit_samples=None) -> Path:
    """The results file and its samples files copied into ``into``, the results JSON changed by ``edit(data)`` and
    each samples line by ``edit_samples(task, line) -> line``."""
    into.mkdir(parents=True, exist_ok=True)
    for path in results.parent.glob("samples_*.jsonl"):
        lines = path.read_text().splitlines()
        task = path.name.removeprefix("samples_").rsplit("_", 1)[0]
        (into / path.name).write_text("".join((edit_samples(task, line) if edit_samples else line) + "\n"
                                              for line in lines))
    data = json.loads(results.read_text())
    if edit:
        edit(data)
    (into / results.name).write_text(json.dumps(data))
    return into / results.name


def stored_cells(store: Path) -> set:
    return set(sqlite3.connect(store).execute("SELECT task, context_length FROM units").fetchall())


@pytest.mark.e2e
def test_ingest_refuses_the_lengths_lm_eval_ran_past_its_max_length_and_keeps_the_rest(plugin_output, tmp_path, capsys):
    cut = edited_copy(plugin_output, tmp_path / "cut", lambda d: d.update(max_length=1024))
    store = tmp_path / "s.db"
    assert main(["ingest", str(cut), "--store", str(store)]) == 1
    said = capsys.readouterr()
    assert "4 units added" in said.out and said.err.count("\n") == 1
    assert "sniah_1 at 2048: needs 2048 tokens (prompt + generation) but lm-eval ran the model with max_length 1024" in said.out
    assert stored_cells(store) == {(task, 1024) for task in PLUGIN_TASKS.split(",")}


@pytest.mark.e2e
def test_ingest_refuses_results_that_do_not_record_max_length(plugin_output, tmp_path, capsys):
    unknown = edited_copy(plugin_output, tmp_path / "unknown", lambda d: d.pop("max_length"))
    assert main(["ingest", str(unknown), "--store", str(tmp_path / "s.db")]) == 1
    out = capsys.readouterr().out
    assert "nothing to add" in out and "sniah_1 at 1024: the results record no max_length" in out
    assert stored_cells(tmp_path / "s.db") == set()


@pytest.mark.e2e
def test_ingest_refuses_a_length_whose_logged_samples_show_a_cut(plugin_output, tmp_path, capsys):
    def longer(task, line):
        record = json.loads(line)
        if task == "sniah_1" and record["doc"]["max_length"] == 1024:
            record["doc"]["length"] = 5000  # a prompt the model's 4096 cannot hold
        return json.dumps(record)

    shown = edited_copy(plugin_output, tmp_path / "shown", edit_samples=longer)
    assert main(["ingest", str(shown), "--store", str(tmp_path / "s.db")]) == 1
    assert "takes 5000 tokens, more than max_length 4096: lm-eval cut it" in capsys.readouterr().out
    assert ("sniah_1", 1024) not in stored_cells(tmp_path / "s.db")
    assert ("sniah_1", 2048) in stored_cells(tmp_path / "s.db")


@pytest.mark.e2e
@pytest.mark.parametrize("value", [-5.0, 250.0])
def test_ingest_refuses_an_accuracy_no_score_can_be(plugin_output, tmp_path, capsys, value):
    odd = edited_copy(plugin_output, tmp_path / "odd", lambda d: d["results"]["sniah_1"].update({"1024,none": value}))
    assert main(["ingest", str(odd), "--store", str(tmp_path / "s.db")]) == 1
    assert f"sniah_1 at 1024: score {value} is outside [0.0, 100.0]" in capsys.readouterr().out
    assert ("sniah_1", 1024) not in stored_cells(tmp_path / "s.db")


def _first_sniah_line(change):
    def edit(task, line):
        record = json.loads(line)
        if task == "sniah_1" and record["doc_id"] == 0 and record["doc"]["max_length"] == 1024:
            return change(record)
        return line
    return edit


@pytest.mark.e2e
@pytest.mark.parametrize("edit,edit_samples,said", [
    (None, _first_sniah_line(lambda r: json.dumps({**r, "target": "\ud800"})), "not valid Unicode"),
    (None, _first_sniah_line(lambda r: json.dumps({**r, "doc_id": "zero"})), "doc_id 'zero' is not an integer"),
    (None, _first_sniah_line(lambda r: "[1, 2]"), "is not a sample object"),
    (lambda d: d.update(date=1e20), None, "date 1e+20 is not a time"),
    (lambda d: d.update(versions=None), None, "'versions' is NoneType, not an object"),
    (lambda d: d.update(max_length="4k"), None, "max_length '4k' is not a token count"),
], ids=["surrogate", "doc_id", "not-object", "date", "versions", "max_length"])
def test_a_damaged_results_or_samples_file_is_one_line_and_writes_nothing(plugin_output, tmp_path, capsys, edit,
                                                                          edit_samples, said):
    damaged = edited_copy(plugin_output, tmp_path / "damaged", edit, edit_samples)
    store = tmp_path / "s.db"
    assert main(["ingest", str(damaged), "--store", str(store)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and err.startswith("ccq-eval: error: ") and not store.exists()


@pytest.mark.e2e
@pytest.mark.parametrize("max_length", [None, 1024])
def test_lm_table_results_below_the_lm_window_or_without_max_length_are_refused(lm_eval_output, tmp_path, capsys,
                                                                                max_length):
    short = edited_copy(lm_eval_output, tmp_path / "short",
                        lambda d: d.pop("max_length") if max_length is None else d.update(max_length=max_length))
    assert main(["ingest", str(short), "--store", str(tmp_path / "s.db")]) == 1
    out = capsys.readouterr().out
    assert "refused piqa: the results " in out and "lm-eval may have cut its contexts" in out
    assert stored_cells(tmp_path / "s.db") == set()


RETRIEVAL_LENGTHS = {"recall_nq": 2048, "ruler_qa_squad": 4096}  # RULER QA's ten documents need over 2K byte tokens


@pytest.fixture(scope="module")
def retrieval_plugin_output(tmp_path_factory):
    """The recall and RULER QA plugins run by lm-eval's own CLI on the shipped records (recall at 2K, the recall
    table's length; QA at 4K), samples logged: task -> its results file."""
    from ccq_eval.data import SHIPPED_RECORDS

    root, found = tmp_path_factory.mktemp("retrieval-plugins"), {}
    for task, length in RETRIEVAL_LENGTHS.items():
        metadata = {"max_seq_lengths": [length], "num_samples": 2, "data_dir": str(SHIPPED_RECORDS)}
        with pytest.MonkeyPatch.context() as mp:
            for name, value in (("HF_HUB_OFFLINE", "1"), ("HF_DATASETS_OFFLINE", "1"),
                                ("CCQ_EVAL_CACHE", str(root / "c"))):
                mp.setenv(name, value)
            assert main(["lm-eval", "run", "--model", "hf", "--model_args", "pretrained=zoo:gla-tiny,dtype=float32",
                         "--tasks", task, "--metadata", json.dumps(metadata), "--device", "cpu", "--batch_size", "1",
                         "--output_path", str(root / task), "--log_samples"]) == 0
        (found[task],) = (root / task).rglob("results_*.json")
    return found


@pytest.mark.e2e
def test_recall_and_ruler_qa_plugin_results_ingest_into_their_units_and_tables(retrieval_plugin_output, tmp_path,
                                                                               capsys):
    from ccq_eval.store import Store

    def halfway(data):  # the zoo scores 0: one sample made right, so a stored number must be the file's own
        data["results"]["recall_nq"]["2048,none"] = 50.0

    def first_right(task, line):
        record = json.loads(line)
        return json.dumps({**record, "2048": 100.0, "score": 100.0}) if (task, record["doc_id"]) == (
            "recall_nq", 0) else line

    edited = {"recall_nq": edited_copy(retrieval_plugin_output["recall_nq"], tmp_path / "edited", halfway,
                                       first_right), "ruler_qa_squad": retrieval_plugin_output["ruler_qa_squad"]}
    data = {task: json.loads(path.read_text())["results"][task] for task, path in edited.items()}
    store = tmp_path / "s.db"
    for path in edited.values():
        assert main(["ingest", str(path), "--store", str(store), "--label", "lm-eval gla"]) == 0
        assert "1 units added" in capsys.readouterr().out
    read = Store(store, readonly=True)
    units = {(u.suite, u.task, u.context_length): u for u in read.reads.units()}
    assert set(units) == {("recall", "recall_nq", 2048), ("ruler", "ruler_qa_squad", 4096)}
    for (suite, task, length), unit in units.items():
        (metric,) = read.reads.metrics(unit.id)
        assert metric.metric == {"recall": "contains", "ruler": "score"}[suite] and metric.is_primary
        assert metric.value == data[task][f"{length},none"] != -1
        samples = read.reads.samples(unit.id)
        assert len(samples) == 2 and all(s.prompt_sha256 and s.target for s in samples)
        assert [s.score for s in samples] == ([100.0, 0.0] if task == "recall_nq" else [0.0, 0.0])
    for table, column, task in (("recall", "NQ", "recall_nq"), ("ruler", "QA-1 4K", "ruler_qa_squad")):
        assert main(["tables", "--table", table, "--store", str(store), "--out", str(tmp_path / "t"),
                     "--format", "csv"]) == 0
        header, row = (tmp_path / "t" / f"{table}.csv").read_text().splitlines()[:2]
        cells = dict(zip(header.split(","), row.split(",")))
        assert cells["label"] == "lm-eval gla" and float(cells[column]) == data[task][
            f"{RETRIEVAL_LENGTHS[task]},none"]
