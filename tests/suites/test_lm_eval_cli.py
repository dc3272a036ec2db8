"""The task plugins under lm-eval's own command line: stock ``lm_eval`` with ``--include_path`` on a
transformers checkpoint, and ``ccq-eval lm-eval`` (lm-eval's CLI with fla and the CCQ families registered) on an fla
and a CCQ checkpoint, each for S-NIAH, a multi-needle task (its name is RULER's: the include path's task takes
precedence over lm-eval's port of it, which reports no "score"), longppl and a LongBench task. No ``tokenizer`` in the metadata: the plugins
read the model's own (``pretrained``), as lm-eval's RULER tasks do."""

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.lm.stock_cli import lm_eval_argv
from tests.helpers import save_checkpoint, tiny_model

REPO = Path(__file__).resolve().parents[2]
LONGBENCH_DATA = REPO / "tests" / "fixtures" / "store_v1" / "data"  # longbench/qasper.jsonl
TASKS = "sniah_1,niah_multikey_2,longppl_essays,longbench_qasper"  # niah_multikey_2: ours, not lm-eval's RULER port
METADATA = json.dumps({"max_seq_lengths": [1024], "num_samples": 1, "data_dir": str(LONGBENCH_DATA)})


def results_of(output: Path) -> dict:
    (found,) = output.rglob("results_*.json")
    return json.loads(found.read_text())


def check_every_task_scored(results: dict, model: str) -> None:
    assert set(results["results"]) == set(TASKS.split(","))
    for task, numbers in results["results"].items():
        metric = {"sniah_1": "score,none", "niah_multikey_2": "score,none", "longppl_essays": "perplexity,none",
                  "longbench_qasper": "score,none"}[task]
        assert isinstance(numbers[metric], float), (task, numbers)
        assert results["n-samples"][task]["effective"] == 1
    assert results["config"]["model_args"]["pretrained"].endswith(model)


def test_include_path_prints_the_plugins_folder(capsys):
    assert main(["include-path"]) == 0
    folder = Path(capsys.readouterr().out.strip())
    assert (folder / "sniah" / "_sniah_yaml").is_file() and (folder / "longbench" / "utils.py").is_file()


def test_the_wrapper_adds_the_include_path_only_where_none_is_given():
    from ccq_eval.task_plugins import include_path

    argv = lm_eval_argv(["run", "--tasks", "sniah_1"])
    assert argv[argv.index("--include_path") + 1] == include_path() and argv.count("--include_path") == 1
    assert lm_eval_argv(["--tasks", "x", "--include_path", "/mine"]).count("--include_path") == 1
    assert "--include_path" not in lm_eval_argv(["ls", "tasks"])
    (args,) = [a for a in lm_eval_argv(["--model_args", "pretrained=zoo:gla-tiny,dtype=float32"]) if "pretrained" in a]
    assert args.startswith("pretrained=/") and args.endswith("gla-tiny,dtype=float32")


@pytest.mark.e2e
def test_stock_lm_eval_runs_the_plugins_on_a_transformers_checkpoint(tmp_path, capsys):
    torch.manual_seed(0)
    model = save_checkpoint(tiny_model("llama"), tmp_path / "tiny-llama")
    assert main(["include-path"]) == 0
    include = capsys.readouterr().out.strip()
    done = subprocess.run(
        [sys.executable, "-m", "lm_eval", "run", "--model", "hf", "--model_args", f"pretrained={model}",
         "--include_path", include, "--tasks", TASKS, "--metadata", METADATA, "--device", "cpu", "--batch_size", "1",
         "--output_path", str(tmp_path / "out")],
        capture_output=True, text=True, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"})
    assert done.returncode == 0, done.stderr[-3000:]
    check_every_task_scored(results_of(tmp_path / "out"), "tiny-llama")


@pytest.mark.e2e
@pytest.mark.parametrize("zoo", ["transformer-tiny", "ccq-gla-tiny"])
def test_the_wrapper_runs_the_plugins_on_fla_and_ccq_checkpoints(zoo, tmp_path, monkeypatch):
    """fla's Transformer++ (model_type transformer) and CCQ-GLA: stock lm-eval cannot build either."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    assert main(["lm-eval", "run", "--model", "hf", "--model_args", f"pretrained=zoo:{zoo},dtype=float32",
                 "--tasks", TASKS, "--metadata", METADATA, "--device", "cpu", "--batch_size", "1",
                 "--output_path", str(tmp_path / "out")]) == 0
    results = results_of(tmp_path / "out")
    check_every_task_scored(results, zoo)
    model_type = json.loads((Path(results["config"]["model_args"]["pretrained"]) / "config.json").read_text())["model_type"]
    assert model_type == {"transformer-tiny": "transformer", "ccq-gla-tiny": "ccq_gla"}[zoo]


def test_a_plugin_without_any_tokenizer_names_both_ways_to_give_one():
    from ccq_eval.suites.sniah.plugin import dataset

    with pytest.raises(ValueError, match="pretrained=CKPT.*tokenizer"):
        dataset("sniah_1", max_seq_lengths=[1024])
