"""Hostile inputs against a store that already holds results: malformed checkpoints, devices, stores, merges,
flags and data files. Each case asserts its exit code, a one-line message naming the input and the fix, no
traceback, and the row counts of that store (tests/fixtures/store_v1) before and after."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
import torch

from ccq_eval.cli import main
from tests.helpers import save_checkpoint, tiny_model

FIXTURE_STORE = Path(__file__).resolve().parents[1] / "fixtures" / "store_v1" / "store.db"


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("good")
    return {"gla": save_checkpoint(tiny_model("gla"), folder / "gla"),
            "transformer": save_checkpoint(tiny_model("transformer"), folder / "transformer")}


def counts(store: Path) -> dict | None:
    if not store.is_file():
        return None
    db = sqlite3.connect(store)
    try:
        return {t: db.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in ("runs", "units", "metrics", "samples")}
    except sqlite3.DatabaseError:
        return {"unreadable": store.read_bytes().__hash__()}


# --- checkpoint mutations ------------------------------------------------------------------------------

def config_edit(**fields):
    def mutate(folder):
        cfg = json.loads((folder / "config.json").read_text())
        cfg.update(fields)
        (folder / "config.json").write_text(json.dumps(cfg))
    return mutate


def write(name, content):
    def mutate(folder):
        path = folder / name
        if path.is_dir():
            shutil.rmtree(path)
        path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return mutate


def config_is_a_directory(folder):
    (folder / "config.json").unlink()
    (folder / "config.json").mkdir()


def sharded(index):
    def mutate(folder):
        (folder / "model.safetensors").rename(folder / "model-00001.safetensors")
        (folder / "model.safetensors.index.json").write_text(index if isinstance(index, str) else json.dumps(index))
    return mutate


def pickled_garbage(folder):
    (folder / "model.safetensors").unlink()
    (folder / "pytorch_model.bin").write_bytes(b"\x80\x04not a pickle at all")


def run_args(model, tmp, *extra):
    return ["--model", str(model), "--suite", "sniah", "--lengths", "1k", "--samples", "2", "--device", "cpu",
            "--store", str(tmp / "ccq.db"), *extra]


CHECKPOINTS = [  # (id, mutation, extra flags, message)
    ("config.json is a folder", config_is_a_directory, (), "no config.json"),
    ("config.json empty", write("config.json", ""), (), "config.json is not valid JSON"),
    ("config.json a list", write("config.json", "[1, 2]"), (), "config.json has no model_type"),
    ("num_heads 0", config_edit(num_heads=0), (), "num_heads = 0; it must be a positive integer"),
    ("hidden_size 0", config_edit(hidden_size=0), (), "hidden_size = 0; it must be a positive integer"),
    ("num_hidden_layers -1", config_edit(num_hidden_layers=-1), (), "num_hidden_layers = -1"),
    ("vocab_size a string", config_edit(vocab_size="big"), (), "vocab_size = 'big'"),
    ("hidden_size a float", config_edit(hidden_size=64.5), (), "hidden_size = 64.5"),
    ("num_heads a bool", config_edit(num_heads=True), (), "num_heads = True"),
    ("max_position_embeddings 0", config_edit(max_position_embeddings=0), (), "max_position_embeddings = 0"),
    ("index not JSON", sharded("{"), (), "model.safetensors.index.json is not a weight index"),
    ("index without weight_map", sharded({"metadata": {}}), (), "is not a weight index"),
    ("index weight_map a list", sharded({"weight_map": ["a"]}), (), "is not a weight index"),
    ("index shard outside the folder", sharded({"weight_map": {"w": "../outside.safetensors"}}), (),
     "names a shard outside the checkpoint folder"),
    ("index shard an absolute path", sharded({"weight_map": {"w": "/etc/passwd"}}), (), "outside the checkpoint folder"),
    ("index shard missing", sharded({"weight_map": {"w": "model-00002.safetensors"}}), (), "is missing"),
    ("tokenizer.json of the wrong shape", write("tokenizer.json", '{"foo": 1}'), (), "tokenizer cannot be loaded"),
    ("tokenizer.json not JSON", write("tokenizer.json", "{{{"), (), "tokenizer cannot be loaded"),
    ("corrupt pickle with --allow-pickle", pickled_garbage, ("--allow-pickle",), "is not a readable pickle checkpoint"),
    ("zero-byte weights", write("model.safetensors", b""), (), "re-download or re-save the checkpoint"),
    ("model_type llama over GLA fields", config_edit(model_type="llama"), (),
     "config.json cannot be read as a 'llama' config"),
    ("model.safetensors a folder", lambda f: ((f / "model.safetensors").unlink(), (f / "model.safetensors").mkdir()),
     (), "model.safetensors is not a regular file"),
    ("index a folder", lambda f: (sharded({"weight_map": {}})(f), (f / "model.safetensors.index.json").unlink(),
                                  (f / "model.safetensors.index.json").mkdir()), (), "is not a weight index"),
]


@pytest.mark.parametrize("name,mutate,extra,message", CHECKPOINTS, ids=[c[0] for c in CHECKPOINTS])
def test_malformed_checkpoint(good, tmp_path, capsys, name, mutate, extra, message):
    folder = tmp_path / "ckpt"
    shutil.copytree(good["gla"], folder)
    mutate(folder)
    check(tmp_path, capsys, run_args(folder, tmp_path, *extra), 2, message)


def check(tmp_path, capsys, argv, code, message, env=None, monkeypatch=None, store=None):
    """Run the CLI on argv with a store that already holds results; the contract every case shares."""
    store = store or tmp_path / "ccq.db"
    if not store.exists() and "--store" in argv and argv[argv.index("--store") + 1] == str(store):
        shutil.copy(FIXTURE_STORE, store)
    before = counts(store)
    capsys.readouterr()
    assert main(argv) == code
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert "Traceback" not in captured.err + captured.out
    assert err.startswith("ccq-eval: error:") and "\n" not in err and message in err, err
    assert counts(store) == before


# --- devices, dtypes, the zoo ---------------------------------------------------------------------------

RUNTIME = [  # (id, flags, env, message)
    ("--device mps", ("--device", "mps"), {}, "device 'mps': not supported"),
    ("--device meta", ("--device", "meta"), {}, "device 'meta': not supported"),
    ("--device xyz", ("--device", "xyz"), {}, "device 'xyz': not a torch device"),
    ("--device cuda without a GPU", ("--device", "cuda"), {}, "CUDA is not available on this machine"),
    ("--dtype int8", ("--dtype", "int8"), {}, "dtype 'int8': unknown"),
]


@pytest.mark.parametrize("name,flags,env,message", RUNTIME, ids=[c[0] for c in RUNTIME])
def test_bad_runtime_choice(good, tmp_path, capsys, name, flags, env, message):
    argv = run_args(good["gla"], tmp_path)
    argv[argv.index("--device"):argv.index("--device") + 2] = []
    check(tmp_path, capsys, argv + list(flags), 2, message)


def test_ccq_on_a_transformer(good, tmp_path, capsys):
    check(tmp_path, capsys, run_args(good["transformer"], tmp_path, "--ccq-lambda", "0.3"), 2,
          "CCQ options do not apply to Transformer++ (softmax attention")


@pytest.mark.parametrize("kind,message", [("file", "CCQ_EVAL_ZOO) is a file"), ("empty", "no zoo model of that name")])
def test_zoo_folder_that_is_not_one(tmp_path, capsys, monkeypatch, kind, message):
    zoo = tmp_path / "zoo"
    zoo.write_text("x") if kind == "file" else zoo.mkdir()
    monkeypatch.setenv("CCQ_EVAL_ZOO", str(zoo))
    check(tmp_path, capsys, run_args("zoo:gla-tiny", tmp_path), 2, message)


# --- stores ---------------------------------------------------------------------------------------------

def corrupt_pages(path: Path) -> None:
    data = bytearray(FIXTURE_STORE.read_bytes())
    page = 4096
    data[2 * page:len(data) - page] = b"\xa5" * (len(data) - 3 * page)  # every page but the header and last
    path.write_bytes(bytes(data))


def newer_schema(path: Path) -> None:
    shutil.copy(FIXTURE_STORE, path)
    sqlite3.connect(path).execute("PRAGMA user_version = 99").connection.commit()


def foreign_tables(path: Path) -> None:
    db = sqlite3.connect(path)
    db.execute("CREATE TABLE t (x)")
    db.execute("PRAGMA user_version = 1")
    db.commit()


STORES = [  # (id, argv builder(tmp, good), message)
    ("--store empty", lambda t, g: run_args(g, t)[:-1] + [""], "--store '': an empty value"),
    ("--store blank", lambda t, g: run_args(g, t)[:-1] + [" "], "--store ' ': an empty value"),
    ("--store :memory:", lambda t, g: run_args(g, t)[:-1] + [":memory:"], "store ':memory:': not a file"),
    ("--store file::memory:", lambda t, g: run_args(g, t)[:-1] + ["file::memory:"], "not a file"),
    ("runs --store empty", lambda t, g: ["runs", "--store", ""], "--store '': an empty value"),
    ("raw/ is a file", lambda t, g: ((t / "raw").write_text("x"), run_args(g, t))[1], "beside it is a file"),
    ("store is a folder", lambda t, g: ((t / "dir.db").mkdir(), run_args(g, t)[:-1] + [str(t / "dir.db")])[1],
     "not a readable ccq-eval store"),
    ("store of a newer schema", lambda t, g: (newer_schema(t / "n.db"), run_args(g, t)[:-1] + [str(t / "n.db")])[1],
     "schema version 99 is newer"),
    ("store with foreign tables", lambda t, g: (foreign_tables(t / "f.db"), run_args(g, t)[:-1] + [str(t / "f.db")])[1],
     "not a ccq-eval store"),
    ("runs on a corrupted page", lambda t, g: (corrupt_pages(t / "c.db"), ["runs", "--store", str(t / "c.db")])[1],
     "c.db': cannot be read (database disk image is malformed); restore it from a copy"),
    ("tables on a corrupted page", lambda t, g: (corrupt_pages(t / "c.db"), ["tables", "--store", str(t / "c.db"),
                                                                               "--out", str(t / "out")])[1],
     "c.db': cannot be read (database disk image is malformed); restore it from a copy"),
    ("curves on a corrupted page", lambda t, g: (corrupt_pages(t / "c.db"), ["curves", "--store", str(t / "c.db"),
                                                                               "--out", str(t / "out")])[1],
     "c.db': cannot be read (database disk image is malformed); restore it from a copy"),
    ("runs --delete on a missing store", lambda t, g: ["runs", "--delete", "x", "--store", str(t / "none.db")],
     "no store"),
    ("runs --delete an unknown id", lambda t, g: ["runs", "--delete", "nope", "--store", str(t / "ccq.db")],
     "no run with that id"),
    ("runs on a missing store", lambda t, g: ["runs", "--store", str(t / "none.db")], "no such file"),
    ("tables --table nope", lambda t, g: ["tables", "--table", "nope", "--store", str(t / "ccq.db")], "unknown"),
    ("tables --baseline unknown", lambda t, g: ["tables", "--table", "sniah", "--baseline", "zzz", "--store",
                                                str(t / "ccq.db"), "--out", str(t / "out")], "no such label"),
    ("tables --average unknown", lambda t, g: ["tables", "--table", "lm", "--average", "mmlu", "--store",
                                               str(t / "ccq.db"), "--out", str(t / "out")], "has no accuracy column"),
    ("curves --figure nope", lambda t, g: ["curves", "--figure", "nope", "--store", str(t / "ccq.db")], "unknown"),
    ("ingest a missing source", lambda t, g: ["ingest", str(t / "none.db"), "--store", str(t / "ccq.db")],
     "none.db"),
    ("ingest a garbage source", lambda t, g: ((t / "g.db").write_bytes(b"junk" * 999),
                                              ["ingest", str(t / "g.db"), "--store", str(t / "ccq.db")])[1], "g.db"),
    ("ingest a newer-schema source", lambda t, g: (newer_schema(t / "n.db"),
                                                   ["ingest", str(t / "n.db"), "--store", str(t / "ccq.db")])[1],
     "newer than this ccq-eval"),
    ("ingest a good then a missing source", lambda t, g: (shutil.copy(FIXTURE_STORE, t / "n.db"), [
        "ingest", str(t / "n.db"), str(t / "none.db"), "--store", str(t / "new.db")])[1], "none.db"),
    ("ingest a source with an extra column", lambda t, g: (extra_column(t / "x.db"), [
        "ingest", str(t / "x.db"), "--store", str(t / "new.db")])[1], "table units has other columns than a ccq-eval store's (extra ['note']"),
    ("ingest a source with a corrupt page", lambda t, g: (corrupt_pages(t / "c.db"), [
        "ingest", str(t / "c.db"), "--store", str(t / "new.db")])[1], "c.db'"),
    ("a store with other columns", lambda t, g: (extra_column(t / "x.db"), run_args(g, t)[:-1] + [str(t / "x.db")])[1],
     "has other columns than a ccq-eval store's"),
    ("--store an in-memory URI", lambda t, g: run_args(g, t)[:-1] + ["file:x?mode=memory&cache=shared"], "not a file"),
    ("file URI: run", lambda t, g: run_args(g, t)[:-1] + [f"file:{t}/u.db"], "a SQLite URI, not a path"),
    ("file URI: tables", lambda t, g: ["tables", "--store", f"file:{t}/u.db", "--out", str(t / "out")],
     "a SQLite URI, not a path"),
    ("file URI: rescore", lambda t, g: ["rescore", "--store", f"file:{t}/u.db"], "a SQLite URI, not a path"),
    ("file URI: runs", lambda t, g: ["runs", "--store", f"file:{t}/u.db?mode=rwc"], "a SQLite URI, not a path"),
    ("file URI: view", lambda t, g: ["view", "--store", f"file:{t}/ccq.db", "--out", str(t / "r.html")],
     "a SQLite URI, not a path"),
    ("tables --out under a file", lambda t, g: ((t / "f").write_text("x"), ["tables", "--store", str(t / "ccq.db"),
                                                                            "--out", str(t / "f" / "out")])[1],
     "is a file, not a folder"),
    ("curves --out under a file", lambda t, g: ((t / "f").write_text("x"), ["curves", "--store", str(t / "ccq.db"),
                                                                            "--out", str(t / "f" / "out")])[1],
     "is a file, not a folder"),
    ("tables output file a folder", lambda t, g: ((t / "out" / "sniah.md").mkdir(parents=True), [
        "tables", "--store", str(t / "ccq.db"), "--out", str(t / "out")])[1], "sniah.md' is a folder where a file"),
    ("curves output file a folder", lambda t, g: ((t / "out" / "longppl.png").mkdir(parents=True), [
        "curves", "--store", str(t / "ccq.db"), "--out", str(t / "out")])[1], "longppl.png' is a folder where a file"),
    ("runs --delete empty", lambda t, g: ["runs", "--delete", "", "--store", str(t / "ccq.db")],
     "--delete '': an empty value"),
    ("zoo build --threads -1", lambda t, g: ["zoo", "build", "--threads", "-1", "--work", str(t / "w")],
     "argument --threads: -1 is outside [1, 1024]"),
    ("zoo build --steps 0", lambda t, g: ["zoo", "build", "--steps", "0", "--work", str(t / "w")],
     "argument --steps: 0 is outside"),
]


def extra_column(path: Path) -> None:
    shutil.copy(FIXTURE_STORE, path)
    sqlite3.connect(path).execute("ALTER TABLE units ADD COLUMN note TEXT").connection.commit()


@pytest.mark.parametrize("name,build,message", STORES, ids=[c[0] for c in STORES])
def test_store_input(good, tmp_path, capsys, name, build, message):
    shutil.copy(FIXTURE_STORE, tmp_path / "ccq.db")
    argv = build(tmp_path, good["gla"])
    check(tmp_path, capsys, argv, 2, message, store=tmp_path / "ccq.db")
    if name.startswith("ingest"):  # no target created, nothing merged
        assert not (tmp_path / "new.db").exists()
    if name.startswith("file URI"):  # no store made at the URI's path, not even an empty file
        assert not (tmp_path / "u.db").exists() and not (tmp_path / "u.db?mode=rwc").exists()


# --- flags -----------------------------------------------------------------------------------------------

FLAGS = [  # (id, extra flags replacing the defaults, message)
    ("--lengths empty", ("--lengths", ""), "--lengths '': an empty value"),
    ("--tasks empty", ("--tasks", ""), "--tasks '': an empty value"),
    ("--lengths beyond 1024k", ("--lengths", "10000000k"), "is more than 1024k tokens"),
    ("--lengths zero", ("--lengths", "0"), "'0' is not a length"),
    ("--lengths repeated", ("--lengths", "1k,1024"), "a length is repeated"),
    ("--lengths below every prompt", ("--lengths", "503", "--samples", "500"), "cannot hold every sniah_1 prompt"),
    ("--samples zero", ("--samples", "0"), "argument --samples: 0 is outside [1, 10000000]"),
    ("--samples 10**23", ("--samples", str(10**23)), f"argument --samples: {10**23} is outside"),
    ("--seed negative", ("--seed", "-1"), "argument --seed: -1 is outside [0, 4294967295]"),
    ("--seed beyond numpy's", ("--seed", str(2**32)), "argument --seed: 4294967296 is outside"),
    ("--seed not a number", ("--seed", "one"), "argument --seed: 'one' is not an integer"),
    ("--ccq-lambda 1e308", ("--ccq-lambda", "1e308"), "argument --ccq-lambda: 1e308 is outside [0.0, 100.0]"),
    ("--ccq-lambda nan", ("--ccq-lambda", "nan"), "argument --ccq-lambda: nan is outside"),
    ("--batch-size huge", ("--batch-size", "100000"), "--batch-size 100000: must be an integer in [1, 4096]"),
    ("--shard without a slash", ("--shard", "1"), "expected i/n"),
    ("--shard not numbers", ("--shard", "a/b"), "expected i/n"),
    ("--engine unknown", ("--suite", "longppl", "--tasks", "essays", "--engine", "fast"), "--engine 'fast': unknown"),
    ("--tasks of another suite", ("--tasks", "pg19"), "is not a task of suite 'sniah'"),
    ("--suite all with --lengths", ("--suite", "all", "--lengths", "1k"), "--suite all runs every suite"),
]


@pytest.mark.parametrize("name,flags,message", FLAGS, ids=[c[0] for c in FLAGS])
def test_bad_flag(good, tmp_path, capsys, name, flags, message):
    argv = run_args(good["gla"], tmp_path, "--tasks", "1")
    override = dict(zip(flags[::2], flags[1::2]))
    merged = dict(zip(argv[::2], argv[1::2]))
    merged.update(override)
    check(tmp_path, capsys, [x for k, v in merged.items() for x in (k, v)], 2, message)


def test_unknown_command(tmp_path, capsys):
    check(tmp_path, capsys, ["frobnicate", "--store", str(tmp_path / "ccq.db")], 2,
          "unknown command 'frobnicate'; commands: run, runs, tables")


# --- data files ------------------------------------------------------------------------------------------

def data_file(kind, name, lines):
    def build(root):
        (root / kind).mkdir(parents=True, exist_ok=True)
        (root / kind / name).write_text("".join(line if isinstance(line, str) else json.dumps(line) + "\n"
                                                for line in lines))
    return build


GOOD_RECORD = {"input": "q?", "context": "c " * 50, "answers": ["a"], "all_classes": None}
DATA = [  # (id, builder, flags, message)
    ("lm file with a bad line", data_file("lm", "piqa.jsonl", [{"goal": "g", "sol1": "a", "sol2": "b", "label": 0},
                                                                "not json\n"]),
     ("--suite", "lm", "--tasks", "piqa"), "line 2 is not JSON"),
    ("lm file with a list", data_file("lm", "piqa.jsonl", [[1, 2]]), ("--suite", "lm", "--tasks", "piqa"),
     "line 1 is not a JSON object"),
    ("lm file empty", data_file("lm", "piqa.jsonl", ["\n"]), ("--suite", "lm", "--tasks", "piqa"), "no records"),
    ("LongBench answers empty", data_file("longbench", "qasper.jsonl", [{**GOOD_RECORD, "answers": []}]),
     ("--suite", "longbench", "--tasks", "qasper"), "'answers' holds no non-empty answer"),
    ("LongBench answers blank", data_file("longbench", "qasper.jsonl", [{**GOOD_RECORD, "answers": ["", " "]}]),
     ("--suite", "longbench", "--tasks", "qasper"), "line 1: 'answers' holds no non-empty answer"),
    ("LongBench input null", data_file("longbench", "qasper.jsonl", [{**GOOD_RECORD, "input": None}]),
     ("--suite", "longbench", "--tasks", "qasper"), "'input' must be a string, not NoneType"),
    ("LongBench context a number", data_file("longbench", "qasper.jsonl", [{**GOOD_RECORD, "context": 3}]),
     ("--suite", "longbench", "--tasks", "qasper"), "'context' must be a string"),
    ("LongBench all_classes a string", data_file("longbench", "trec.jsonl", [{**GOOD_RECORD, "all_classes": "x"}]),
     ("--suite", "longbench", "--tasks", "trec"), "'all_classes' must be a list of strings or null"),
    ("LongBench file empty", data_file("longbench", "qasper.jsonl", ["\n"]), ("--suite", "longbench", "--tasks", "qasper"),
     "no records"),
    ("LongBench data missing", lambda root: root.mkdir(exist_ok=True), ("--suite", "longbench", "--tasks", "qasper"),
     "LongBench data not found offline: qasper"),
    ("corpus line an array", data_file("longppl", "pg19.jsonl", [["text"]]), ("--suite", "longppl", "--tasks", "pg19"),
     "line 1 has no string field 'text'"),
    ("haystack folder without text", lambda root: (root / "haystack").mkdir(parents=True),
     ("--tasks", "2"), "folder has no .txt or .jsonl files"),
    ("corpus path a folder", lambda root: (root / "longppl" / "pg19.jsonl").mkdir(parents=True),
     ("--suite", "longppl", "--tasks", "pg19"), "pg19.jsonl': is a folder; expected a JSONL file"),
    ("corpus nested 100,000 deep", data_file("longppl", "pg19.jsonl", ["[" * 100_000 + "]" * 100_000 + "\n"]),
     ("--suite", "longppl", "--tasks", "pg19"), "line 1 cannot be read (nested too deeply)"),
    ("corpus with a 5,000-digit number", data_file("longppl", "pg19.jsonl", ['{"text": "a", "n": ' + "9" * 5000 + "}\n"]),
     ("--suite", "longppl", "--tasks", "pg19"), "line 1 cannot be read (a number too long to convert)"),
    ("corpus with a lone surrogate", data_file("longppl", "pg19.jsonl", ['{"text": "a\\ud800b"}\n']),
     ("--suite", "longppl", "--tasks", "pg19"), "line 1 holds a lone UTF-16 surrogate"),
    ("LongBench record with a lone surrogate", data_file("longbench", "qasper.jsonl", ['{"input": "\\udc00", '
                                                                                    '"context": "c", "answers": ["a"]}\n']),
     ("--suite", "longbench", "--tasks", "qasper"), "line 1 holds a lone UTF-16 surrogate"),
]


@pytest.mark.parametrize("name,build,flags,message", DATA, ids=[c[0] for c in DATA])
def test_bad_data_file(good, tmp_path, capsys, name, build, flags, message):
    root = tmp_path / "data"
    root.mkdir()
    build(root)
    merged = dict(zip(*[iter(run_args(good["gla"], tmp_path, "--data-dir", str(root)))] * 2))
    merged.update(dict(zip(flags[::2], flags[1::2])))
    check(tmp_path, capsys, [x for k, v in merged.items() for x in (k, v)], 2, message)


@pytest.mark.parametrize("haystack,message", [("/dev/zero", "not a regular file"),
                                              ("/nonexistent/essays.txt", "no such file")])
def test_haystack_that_cannot_be_read_whole(good, tmp_path, capsys, haystack, message):
    check(tmp_path, capsys, run_args(good["gla"], tmp_path, "--tasks", "2", "--haystack", haystack), 2, message)


def test_cached_corpus_edited_after_freezing(good, tmp_path, capsys):
    from ccq_eval.data.cache import cache_root, freeze

    path = cache_root() / "longppl" / "pg19.jsonl"
    freeze(path, [{"text": "word " * 3000}], {"corpus": "pg19"})
    path.write_text(path.read_text().replace("word", "ward", 1))
    merged = dict(zip(*[iter(run_args(good["gla"], tmp_path))] * 2))
    merged.update({"--suite": "longppl", "--tasks": "pg19", "--lengths": "256"})
    check(tmp_path, capsys, [x for k, v in merged.items() for x in (k, v)], 2, "does not match its sha256 sidecar")


@pytest.mark.parametrize("cache,message", [
    ("/dev/null/cache", "the data cache (CCQ_EVAL_CACHE) '/dev/null/cache': '/dev/null' is a file, not a folder"),
    ("{tmp}/file/cache", "'{tmp}/file' is a file, not a folder"),
])
def test_a_cache_that_cannot_be_a_folder(good, tmp_path, capsys, monkeypatch, cache, message):
    (tmp_path / "file").write_text("x")
    monkeypatch.setenv("CCQ_EVAL_CACHE", cache.format(tmp=tmp_path))
    check(tmp_path, capsys, run_args(good["gla"], tmp_path), 2, message.format(tmp=tmp_path))
    check(tmp_path, capsys, ["data", "fetch", "longppl", "--store", str(tmp_path / "ccq.db")][:3], 2,
          message.format(tmp=tmp_path))


def test_the_table_has_at_least_sixty_cases():
    cases = len(CHECKPOINTS) + len(RUNTIME) + 1 + 2 + len(STORES) + len(FLAGS) + 1 + len(DATA) + 2 + 1 + 2
    assert cases >= 60, cases
