"""Hostile inputs, one table: each gets its one-line error on stderr, its exit code, and leaves
no store behind."""

import json
import shutil

import pytest
import torch

from ccq_eval.cli import main
from tests.helpers import byte_tokenizer, save_checkpoint, tiny_model


@pytest.fixture(scope="module")
def good_model(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("gla"), tmp_path_factory.mktemp("good") / "gla")


def _variant(good, tmp, how):
    folder = tmp / "ckpt"
    shutil.copytree(good, folder)
    if how == "truncated":
        weights = folder / "model.safetensors"
        weights.write_bytes(weights.read_bytes()[:200])
    elif how == "unknown_type":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["model_type"] = "rwkv99"
        (folder / "config.json").write_text(json.dumps(cfg))
    elif how == "pickle_only":
        (folder / "model.safetensors").rename(folder / "pytorch_model.bin")
    elif how == "big_tokenizer":
        cfg = json.loads((folder / "config.json").read_text())
        cfg["vocab_size"] = 100
        (folder / "config.json").write_text(json.dumps(cfg))
        model = tiny_model("gla", vocab_size=100)
        model.save_pretrained(folder)
    elif how == "silent_tokenizer":  # every character normalised away: every text is zero tokens
        from tokenizers import Regex, normalizers

        tok = byte_tokenizer()
        tok.backend_tokenizer.normalizer = normalizers.Replace(Regex(r"[\s\S]"), "")
        tok.save_pretrained(folder)
    elif how == "no_bos_or_eos":
        tok = byte_tokenizer()
        tok.bos_token = tok.eos_token = None
        tok.save_pretrained(folder)
    elif how == "absent":
        shutil.rmtree(folder)
    return folder


def _data(tmp, kind):
    root = tmp / "data"
    if kind == "wrong_fields":
        (root / "longppl").mkdir(parents=True)
        (root / "longppl" / "pg19.jsonl").write_text(json.dumps({"content": "x"}) + "\n")
    elif kind == "non_utf8":
        (root / "longppl").mkdir(parents=True)
        (root / "longppl" / "pg19.jsonl").write_bytes(b'{"text": "\xff\xfe"}\n')
    elif kind == "empty_corpus":
        (root / "longppl").mkdir(parents=True)
        (root / "longppl" / "pg19.jsonl").write_text("\n\n")
    elif kind == "longbench_fields":
        (root / "longbench").mkdir(parents=True)
        (root / "longbench" / "trec.jsonl").write_text(json.dumps({"input": "q", "context": "c"}) + "\n")
    return root


CASES = [
    ("malformed --lengths", [], ["--lengths", "4kk"], "is not a length", 2),
    ("negative --samples", [], ["--samples", "-3"], "argument --samples: -3 is outside [1, 10000000]", 2),
    ("zero batch size", [], ["--batch-size", "0"], "--batch-size 0: must be an integer in [1, 4096] or auto", 2),
    ("unknown flag", [], ["--frobnicate"], "unrecognized arguments: --frobnicate", 2),
    ("bad shard", [], ["--shard", "5/2"], "need 0 <= i < n", 2),
    ("unknown suite", [], ["--suite", "mmlu"], "unknown suite", 2),
    ("absent checkpoint", ["absent"], [], "no such path", 2),
    ("truncated checkpoint", ["truncated"], [], "model.safetensors: its safetensors header is cut short", 2),
    ("unknown model_type", ["unknown_type"], [], "unknown model_type 'rwkv99': neither fla nor transformers", 2),
    ("pickle-only weights", ["pickle_only"], [], "weights are pickle", 2),
    ("tokenizer larger than the vocabulary", ["big_tokenizer"], [], "the tokenizer has 260 tokens but the model's vocabulary is 100", 2),
    ("tokenizer that encodes text to nothing", ["silent_tokenizer"], [], "the tokenizer encodes text to no tokens", 2),
    ("tokenizer without BOS or EOS", ["no_bos_or_eos"], [], "the tokenizer has neither a BOS nor an EOS token", 2),
    ("corpus without a text field", ["data:wrong_fields"], ["--suite", "longppl", "--tasks", "pg19"], "has no string field 'text'", 2),
    ("corpus with non-UTF-8 bytes", ["data:non_utf8"], ["--suite", "longppl", "--tasks", "pg19"], "is not UTF-8", 2),
    ("empty corpus", ["data:empty_corpus"], ["--suite", "longppl", "--tasks", "pg19", "--lengths", "256"], "no document of 256 tokens", 2),
    ("LongBench record without answers", ["data:longbench_fields"], ["--suite", "longbench", "--tasks", "trec"], "lacks answers", 2),
    ("corrupt store", ["corrupt_store"], [], "not a readable ccq-eval store", 2),
]


@pytest.mark.parametrize("name,setup,flags,message,code", CASES, ids=[c[0] for c in CASES])
def test_hostile_input(good_model, tmp_path, capsys, name, setup, flags, message, code):
    model = good_model
    args = {"--suite": "sniah", "--lengths": "1k", "--samples": "2", "--device": "cpu",
            "--store": str(tmp_path / "ccq.db")}
    for step in setup:
        if step.startswith("data:"):
            args["--data-dir"] = str(_data(tmp_path, step[5:]))
        elif step == "corrupt_store":
            (tmp_path / "ccq.db").write_bytes(b"garbage" * 500)
        else:
            model = _variant(good_model, tmp_path, step)
    override = dict(zip(flags[::2], flags[1::2])) if len(flags) % 2 == 0 else {}
    argv = ["--model", str(model)] + [x for k, v in {**args, **override}.items() for x in (k, v)]
    if len(flags) % 2:
        argv += flags
    capsys.readouterr()
    assert main(argv) == code
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err and err.startswith("ccq-eval: error:"), err
    if "corrupt_store" not in setup:
        assert not (tmp_path / "ccq.db").exists()


def test_labels_with_latex_and_path_characters_are_escaped_everywhere(tmp_path, good_model):
    import sqlite3

    store = tmp_path / "ccq.db"
    label = r"gla/../x & 50% _{tiny} #1 |pipe|"
    from ccq_eval.run import RunRequest, run_suite
    from tests.oracle import oracle_loader

    tokdir = tmp_path / "tok"
    byte_tokenizer().save_pretrained(tokdir)
    run_suite(RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k", samples=2, store=str(store),
                         label=label), oracle_loader(tokdir), out=lambda *_: None)
    assert sqlite3.connect(store).execute("SELECT label FROM runs").fetchone()[0] == label
    assert main(["tables", "--table", "sniah", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    tex = (tmp_path / "t" / "sniah.tex").read_text()
    assert r"gla/../x \& 50\% \_\{tiny\} \#1 |pipe|" in tex
    md = (tmp_path / "t" / "sniah.md").read_text()
    assert r"gla/../x & 50% \_{tiny} \#1 \|pipe\|" in md
    assert sorted(p.name for p in (tmp_path / "t").iterdir()) == ["sniah.csv", "sniah.md", "sniah.tex"]
    assert all(".." not in p.name for p in (tmp_path / "raw").rglob("*"))  # raw JSON named by task, not label


@pytest.mark.parametrize("suite,lengths,fragment", [
    ("sniah", "1k", "(transformer.wpe) has 256 positions, and the sniah suite needs 1024 tokens; pass --lengths up to 256"),
    ("lm", None, "the lm suite needs 2048 tokens; pass another suite (its window is fixed at 2048)"),
])
def test_contexts_past_a_learned_position_table_are_refused(tmp_path, capsys, suite, lengths, fragment):
    """GPT-2 reads positions from a learned table: a longer context indexes past it (a crash on CPU, a device
    assert on CUDA). Refused up front in one line; no store."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=260, n_positions=256, n_embd=32, n_layer=1, n_head=2))
    folder = save_checkpoint(model, tmp_path / "gpt2-tiny")
    store = tmp_path / "ccq.db"
    argv = ["--model", str(folder), "--suite", suite, "--samples", "2", "--device", "cpu", "--store", str(store)]
    if suite == "lm":
        (tmp_path / "d" / "lm").mkdir(parents=True)
        (tmp_path / "d" / "lm" / "piqa.jsonl").write_text(json.dumps({"goal": "g", "sol1": "a", "sol2": "b", "label": 0}))
        argv += ["--tasks", "piqa", "--data-dir", str(tmp_path / "d")]
    capsys.readouterr()
    assert main(argv + (["--lengths", lengths] if lengths else [])) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err and err.startswith("ccq-eval: error:"), err
    assert not store.exists()


def test_a_context_within_a_learned_position_table_runs(tmp_path):
    from ccq_eval.models.capabilities import learned_positions
    from transformers import GPT2Config, GPT2LMHeadModel

    model = GPT2LMHeadModel(GPT2Config(vocab_size=260, n_positions=1024, n_embd=32, n_layer=1, n_head=2))
    assert learned_positions(model) == ("transformer.wpe", 1024)
    assert learned_positions(tiny_model("gla")) is None
    folder = save_checkpoint(model, tmp_path / "gpt2-tiny")
    assert main(["--model", str(folder), "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "1",
                 "--device", "cpu", "--store", str(tmp_path / "s.db")]) == 0
