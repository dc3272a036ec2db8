"""No route stores a number computed on a cut prompt. Each route runs a model whose config says fewer positions
(256) than the task needs (1024 tokens): ccq-eval's own runs, ``ccq-eval lm-eval``, stock lm-eval with the plugins,
and ``ccq-eval ingest`` of lm-eval's results. The result is either the uncut one (the same numbers as the same weights
under a config that says enough positions) or refused."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.lm.context import PromptWouldBeCut
from tests.helpers import save_checkpoint, tiny_model

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "fixtures" / "store_v1" / "data"  # lm/piqa.jsonl, longbench/qasper.jsonl
RULER_QA = RECALL = SHIPPED_RECORDS  # ruler/squad.jsonl, recall/nq.jsonl
SHORT_CONTEXT = 256  # the config's max_position_embeddings
LENGTH = 1024  # what the tasks need


def checkpoint(folder: Path, positions: int) -> Path:
    torch.manual_seed(0)  # the same weights whatever the config says of positions
    return save_checkpoint(tiny_model("gla", max_position_embeddings=positions), folder)


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    return checkpoint(root / "short", SHORT_CONTEXT), checkpoint(root / "long", 1 << 16)


@pytest.fixture(autouse=True)
def offline_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def one_line_error(capsys) -> str:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("ccq-eval: error: "), err
    return err


# --- ccq-eval's own runs: the budget is the suite's lengths, never the config's positions -------------------------

IN_PROCESS = [("sniah", "sniah_1", "1k", "2"), ("multi_niah", "niah_multikey_2", "1k", "2"),
              ("longppl", "essays", "1k", "1"), ("longbench", "qasper", "1k", "1"), ("lm", "piqa", "1k", "3")]


@pytest.mark.e2e
@pytest.mark.parametrize("suite,task,lengths,samples", IN_PROCESS)
def test_a_ccq_eval_run_past_the_configs_positions_is_the_uncut_result(models, tmp_path, suite, task, lengths,
                                                                       samples):
    from ccq_eval.store import Store

    values = []
    for model in models:
        store = tmp_path / f"{model.name}.db"
        assert main(["--model", str(model), "--suite", suite, "--tasks", task, "--lengths", lengths, "--samples",
                     samples, "--data-dir", str(DATA), "--store", str(store), "--device", "cpu"]) == 0
        read = Store(store, readonly=True)
        (unit,) = read.reads.units()
        assert unit.status == "complete"
        values.append(sorted((m.metric, m.value) for m in read.reads.metrics(unit.id)))
        if suite == "sniah":  # the prompt was longer than the config's positions, and scored whole
            assert min(s.fields["prompt_tokens"] for s in read.reads.samples(unit.id)) > SHORT_CONTEXT
    assert values[0] == values[1]


# --- ccq-eval lm-eval: max_length set from the plugins' lengths, a cut refused -----------------------------------

PLUGIN_TASKS = "sniah_1,niah_multikey_2,longppl_essays,longbench_qasper"


def lm_eval_run(model: Path, out: Path, model_args: str = "", tasks: str = PLUGIN_TASKS, extra=()) -> int:
    metadata = {"max_seq_lengths": [LENGTH], "num_samples": 1, "data_dir": str(DATA)}
    return main(["lm-eval", "run", "--model", "hf", "--model_args", f"pretrained={model}{model_args}",
                 "--tasks", tasks, "--metadata", json.dumps(metadata), "--device", "cpu", "--batch_size", "1",
                 "--output_path", str(out), "--log_samples", *extra])


@pytest.fixture(scope="module")
def lm_eval_results(models, tmp_path_factory):
    """The four plugins at 1024 on the model whose config says 256 positions, through ``ccq-eval lm-eval``."""
    out = tmp_path_factory.mktemp("lm-eval") / "out"
    mp = pytest.MonkeyPatch()
    mp.setenv("CCQ_EVAL_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
    mp.setenv("HF_HUB_OFFLINE", "1")
    try:
        assert lm_eval_run(models[0], out) == 0
    finally:
        mp.undo()
    (results,) = out.rglob("results_*.json")
    return results


@pytest.mark.e2e
def test_ccq_eval_lm_eval_gives_the_model_the_budget_its_lengths_need(lm_eval_results, models, tmp_path):
    written = json.loads(lm_eval_results.read_text())
    assert written["max_length"] == LENGTH and written["config"]["model"] == "hf-no-truncation"
    assert written["config"]["model_args"]["max_length"] == LENGTH
    assert lm_eval_run(models[1], tmp_path / "long") == 0  # the same weights, a config with positions to spare
    (long,) = (tmp_path / "long").rglob("results_*.json")
    theirs = json.loads(long.read_text())
    assert theirs["max_length"] == 1 << 16  # its own config's budget: nothing set
    for task in PLUGIN_TASKS.split(","):
        assert written["results"][task][f"{LENGTH},none"] == theirs["results"][task][f"{LENGTH},none"], task


def test_a_max_length_too_small_for_the_lengths_is_refused_before_anything_runs(models, tmp_path, capsys):
    assert lm_eval_run(models[0], tmp_path / "out", ",max_length=512", tasks="sniah_1") == 2
    err = one_line_error(capsys)
    assert "max_length=512" in err and f"{LENGTH} tokens sniah_1 needs" in err
    assert not (tmp_path / "out").exists()


def test_ccq_eval_lm_eval_refuses_to_cut_a_prompt_of_lm_evals_own_tasks(models, tmp_path, capsys):
    """A task that is not a plugin (here a local generation task with one long prompt): the model refuses where
    lm-eval's HF model would have cut the prompt from the left."""
    include = tmp_path / "tasks"
    include.mkdir()
    (tmp_path / "long.jsonl").write_text(json.dumps({"text": "word " * 600, "answer": "x"}) + "\n")
    (include / "long_prompt.yaml").write_text(
        "task: long_prompt\ndataset_path: json\ndataset_kwargs:\n  data_files:\n"
        f"    test: {tmp_path / 'long.jsonl'}\ntest_split: test\noutput_type: generate_until\n"
        "doc_to_text: '{{text}}'\ndoc_to_target: '{{answer}}'\ngeneration_kwargs:\n  max_gen_toks: 8\n  until: []\n"
        "metric_list:\n  - metric: exact_match\n")
    code = main(["lm-eval", "run", "--model", "hf", "--model_args", f"pretrained={models[0]}", "--tasks",
                 "long_prompt", "--include_path", str(include), "--device", "cpu", "--output_path",
                 str(tmp_path / "out")])
    assert code == 2
    said = re.split(r"[\r\n]", capsys.readouterr().err)  # the rest is lm-eval's log and progress bars
    (err,) = [line for line in said if "ccq-eval: error" in line]
    assert err.startswith("ccq-eval: error: lm-eval: a prompt of ") and "it needs max_length=" in err
    assert not (tmp_path / "out").exists()


# --- stock lm-eval with the plugins: the task refuses a length past the model's context --------------------------

def stock_lm_eval(argv: list[str]) -> None:
    from lm_eval.__main__ import cli_evaluate

    from ccq_eval.lm.stock_cli import register_families

    register_families()
    saved = sys.argv
    sys.argv = ["lm_eval", *argv]
    try:
        cli_evaluate()
    finally:
        sys.argv = saved


def test_stock_lm_eval_with_the_plugins_fails_a_length_the_model_would_cut(models, tmp_path):
    metadata = json.dumps({"max_seq_lengths": [LENGTH], "num_samples": 1})
    with pytest.raises(PromptWouldBeCut, match=rf"sniah_1 at length {LENGTH} needs {LENGTH} tokens but the model's "
                                               rf"context is {SHORT_CONTEXT} \(max_position_embeddings in"):
        stock_lm_eval(["run", "--model", "hf", "--model_args", f"pretrained={models[0]}", "--tasks", "sniah_1",
                       "--metadata", metadata, "--include_path", str(REPO / "tasks"), "--device", "cpu",
                       "--output_path", str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


def qa_sized(metadata: dict) -> dict:
    """RULER QA's ten documents need 3K byte tokens: its lengths and budget tripled, the test's relations kept."""
    tripled = {"max_seq_lengths": [3 * L for L in metadata["max_seq_lengths"]]}
    if metadata.get("max_length") == LENGTH:
        tripled["max_length"] = 3 * LENGTH
    return {**metadata, **tripled}


@pytest.mark.parametrize("suite_module,call", [
    ("ccq_eval.suites.sniah.plugin", lambda m, md: m.dataset("sniah_1", **md)),
    ("ccq_eval.suites.multi_niah.plugin", lambda m, md: m.dataset("niah_multikey_2", **md)),
    ("ccq_eval.suites.longppl.plugin", lambda m, md: m.dataset("essays", **md)),
    ("ccq_eval.suites.longbench.plugin", lambda m, md: m.dataset("qasper", data_dir=str(DATA), **md)),
    ("ccq_eval.suites.ruler.plugin", lambda m, md: m.dataset("ruler_fwe", **md)),
    ("ccq_eval.suites.ruler.plugin", lambda m, md: m.dataset("ruler_qa_squad", data_dir=str(RULER_QA), **qa_sized(md))),
])
def test_every_plugin_checks_the_models_context_before_it_builds_data(models, suite_module, call):
    import importlib

    module = importlib.import_module(suite_module)
    metadata = {"pretrained": str(models[0]), "max_seq_lengths": [LENGTH], "num_samples": 1}
    with pytest.raises(PromptWouldBeCut, match=f"model's context is {SHORT_CONTEXT}"):
        call(module, metadata)
    with pytest.raises(PromptWouldBeCut, match="max_length=900"):  # an explicit budget counts, as lm-eval's does
        call(module, {**metadata, "max_length": 900})
    assert len(call(module, {**metadata, "max_length": LENGTH})["test"]) >= 1


def test_the_recall_plugin_asks_for_its_longest_prompt_and_its_48_tokens(models):
    """Its prompts can run past the cut (the question follows the document): what a length needs is its longest
    prompt and its 48 tokens, and nothing runs where lm-eval's context is smaller."""
    from ccq_eval.suites.recall import plugin

    metadata = {"pretrained": str(models[0]), "max_seq_lengths": [LENGTH], "num_samples": 2, "data_dir": str(RECALL)}
    with pytest.raises(PromptWouldBeCut, match=f"model's context is {SHORT_CONTEXT}"):
        plugin.dataset("recall_nq", **metadata)
    docs = plugin.dataset("recall_nq", **{**metadata, "max_length": 4 * LENGTH})["test"]
    need = max(docs["prompt_tokens"]) + 48
    assert all(length == LENGTH for length in docs["max_length"])
    with pytest.raises(PromptWouldBeCut, match=f"max_length={need - 1}"):
        plugin.dataset("recall_nq", **{**metadata, "max_length": need - 1})
    assert len(plugin.dataset("recall_nq", **{**metadata, "max_length": need})["test"]) == 2


def test_the_models_context_is_lm_evals_own_rule():
    from ccq_eval.lm.context import explicit_budget, model_context

    assert model_context({"max_length": "8192"}).tokens == 8192
    assert model_context({"max_model_len": 4096}).tokens == 4096  # vLLM's name
    assert model_context({"pretrained": "no/such-model-anywhere"}) is None
    assert explicit_budget({}) is None
    with pytest.raises(ValueError, match="not a token count"):
        explicit_budget({"max_length": "4k"})


def test_a_model_whose_context_cannot_be_told_is_asked_for_a_max_length():
    from ccq_eval.lm.context import check_lengths_fit

    with pytest.raises(PromptWouldBeCut, match="pass --model_args max_length=2048"):
        check_lengths_fit("sniah_1", {1024: 1024, 2048: 2048}, None)


def test_the_stock_cli_arguments_get_the_strict_model_and_the_budget_only_where_needed(models):
    from functools import partial

    from ccq_eval.cli.lm_eval import plugin_needs
    from ccq_eval.lm.stock_cli import with_context_budget as bare

    with_context_budget = partial(bare, needs=plugin_needs)
    short, long = (str(m) for m in models)
    metadata = json.dumps({"max_seq_lengths": [LENGTH]})
    argv = with_context_budget(["run", "--model_args", f"pretrained={short}", "--tasks", "sniah_1", "--metadata", metadata])
    assert argv[argv.index("--model") + 1] == "hf-no-truncation"
    assert argv[argv.index("--model_args") + 1] == f"pretrained={short},max_length={LENGTH}"
    json_args = with_context_budget(["run", "--model=hf", "--model_args", json.dumps({"pretrained": short}),
                                     "--tasks=sniah_1", "--metadata", metadata])
    assert "--model=hf-no-truncation" in json_args
    assert json.loads(json_args[json_args.index("--model_args") + 1]) == {"pretrained": short, "max_length": LENGTH}
    roomy = with_context_budget(["run", "--model", "hf", "--model_args", f"pretrained={long}", "--tasks", "sniah_1",
                                 "--metadata", metadata])
    assert roomy[roomy.index("--model_args") + 1] == f"pretrained={long}"  # its config has room: left alone
    vllm = with_context_budget(["run", "--model", "vllm", "--model_args", f"pretrained={short}", "--tasks", "piqa"])
    assert vllm == ["run", "--model", "vllm", "--model_args", f"pretrained={short}", "--tasks", "piqa"]
    configured = with_context_budget(["run", "--config", "c.yaml"])  # the model named in the config file stays
    assert "--model" not in configured
