"""`ccq-eval data fetch` and `--model ORG/NAME` against a loopback hub (tests/hub_mirror.py) holding
fixture repositories laid out as the real ones: tau/scrolls (one <config>.zip per subset, plus its
loading script), zai-org/LongBench (data.zip with data/<key>.jsonl), emozilla/pg19 (parquet shards of
every split), codeparrot/codeparrot-clean-valid (gzipped JSON-lines shards) and a tiny checkpoint.
The CLI runs in a subprocess with HF_ENDPOINT pointing at the mirror, as a user would run it."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import math
import os
import socket
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import torch

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.suites.longbench.data import SOURCE as LONGBENCH_SOURCE
from ccq_eval.suites.longppl import sources
from ccq_eval.suites.longppl.sources import deduplicate, strip_scrolls_query
from tests.helpers import byte_tokenizer, save_checkpoint, tiny_model
from tests.hub_mirror import HubMirror, MirrorRepo

pytestmark = pytest.mark.processes  # a loopback hub and a ccq-eval process per test: make test-processes

ROOT = Path(__file__).resolve().parents[2]
SCROLLS_COMMIT = "1" * 40  # what `main` of the mirror's tau/scrolls points at (no pin exists for it)
WORDS = "the report finds that river levels rose while the budget for flood defences fell".split()


def words(n: int, seed: int) -> str:
    return " ".join(WORDS[(i * 7 + seed) % len(WORDS)] for i in range(n))


def jsonl(records) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in records).encode()


def zipped(members: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return buffer.getvalue()


def scrolls_subset(config: str, records: list[dict]) -> bytes:
    return zipped({f"{config}/train.jsonl": jsonl(records[:1]), f"{config}/validation.jsonl": jsonl(records[:1]),
                   f"{config}/test.jsonl": jsonl([{**r, "output": ""} for r in records])})


GOV_DOCS = [words(300, s) for s in range(3)]
PAPERS = [words(250, 10 + s) for s in range(2)]
# Qasper: three questions on paper 0, one on paper 1 -> two documents once the queries are stripped
QASPER = [{"id": f"q{i}", "pid": f"q{i}_0", "input": f"Question {i}?\n\n{PAPERS[p]}", "output": "x"}
          for i, p in enumerate((0, 0, 1, 0))]
MEETINGS = [words(260, 20 + s) for s in range(2)]
QMSUM = [{"id": f"m{i}", "pid": f"m{i}_0", "input": f"What was decided?\n\n{MEETINGS[i % 2]}", "output": "x"}
         for i in range(3)]
STORIES = [words(400, 30 + s) for s in range(2)]
NARRATIVE = [{"id": f"n{i}", "pid": f"n{i}_0", "input": f"Who left?\n\n{STORIES[i // 2]}", "output": "x"}
             for i in range(4)]
BOOKS = [words(500, 40 + s) for s in range(3)]
CODE = [f"def f{i}(x):\n    return x + {i}\n" * 30 for i in range(3)]
LONGBENCH = {
    "qasper": [{"input": f"What is {i}?", "context": words(200, 50 + i), "answers": [WORDS[i]], "length": 200,
                "dataset": "qasper", "language": "en", "all_classes": None, "_id": f"lb{i}"} for i in range(2)],
    "trec": [{"input": "Who wrote it?", "context": "Question: Where? Type: Location\n" * 20, "answers": ["Human"],
              "length": 40, "dataset": "trec", "language": "en", "all_classes": ["Human", "Location"],
              "_id": f"tr{i}"} for i in range(2)],
}


def parquet(texts: list[str]) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    pq.write_table(pa.table({"short_book_title": [f"book {i}" for i in range(len(texts))], "publication_date":
                             [1900] * len(texts), "url": ["u"] * len(texts), "text": texts}), buffer)
    return buffer.getvalue()


BABILONG_COMMIT = "3" * 40


def babilong_parquet(task: str, split: str) -> bytes:
    """A split's rows as RMT-team/babilong-1k-samples lays them out: input, question, target."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [{"input": f"{words(30, i)} John went to the office. {words(20, i + 1)}", "question": "Where is John?",
             "target": "office"} for i in range(3)]
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist([{**r, "input": f"{task} {split} {r['input']}"} for r in rows]), buffer)
    return buffer.getvalue()


def fixture_repos(model_dir: Path) -> list[MirrorRepo]:
    pg19_test = "data/test-00000-of-00001-29a571947c0b5ccc.parquet"
    return [
        MirrorRepo("tau/scrolls", {"scrolls.py": b"# loading script (datasets >= 4 refuses it)\n", "README.md": b"#",
                                   "gov_report.zip": scrolls_subset("gov_report", [
                                       {"id": f"g{i}", "pid": f"g{i}", "input": d} for i, d in enumerate(GOV_DOCS)]),
                                   "qasper.zip": scrolls_subset("qasper", QASPER),
                                   "qmsum.zip": scrolls_subset("qmsum", QMSUM),
                                   "narrative_qa.zip": scrolls_subset("narrative_qa", NARRATIVE)},
                   commit=SCROLLS_COMMIT),
        MirrorRepo("zai-org/LongBench", {"LongBench.py": b"# loading script\n", "data.zip": zipped(
            {f"data/{key}.jsonl": jsonl(records) for key, records in LONGBENCH.items()})},
                   commit=LONGBENCH_SOURCE.commit),
        MirrorRepo("emozilla/pg19", {pg19_test: parquet(BOOKS), "data/train-00000-of-00002-aaaa.parquet":
                                     parquet([words(50, 1)]), "data/validation-00000-of-00001-bbbb.parquet":
                                     parquet([words(50, 2)])}, commit=sources.PG19_COMMIT),
        MirrorRepo("codeparrot/codeparrot-clean-valid", {
            "file-000000000001.json.gz": gzip.compress(jsonl([{"content": c, "path": f"f{i}.py", "license": "mit"}
                                                                for i, c in enumerate(CODE)])),
            "file-000000000002.json.gz": gzip.compress(jsonl([{"content": "unused", "path": "g.py"}]))},
                   commit=sources.CODEPARROT_COMMIT),
        MirrorRepo("RMT-team/babilong-1k-samples", {f"{split}/qa{n}-00000-of-00001.parquet": babilong_parquet(f"qa{n}", split)
                                                    for split, last in (("0k", 20), ("1k", 5))
                                                    for n in range(1, last + 1)},
                   commit=BABILONG_COMMIT),
        MirrorRepo("ccq-test/gla-tiny", {p.name: p.read_bytes() for p in model_dir.iterdir() if p.is_file()},
                   repo_type="model", commit="2" * 40, refs={"v1": "2" * 40}),
    ]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    torch.manual_seed(0)
    folder = save_checkpoint(tiny_model("gla"), tmp_path_factory.mktemp("ckpt") / "gla-tiny")
    torch.save({"unused": torch.zeros(1)}, folder / "pytorch_model.bin")  # a pickle the hub repo also has
    return folder


@pytest.fixture
def mirror(model_dir):
    with HubMirror() as hub:
        for repo in fixture_repos(model_dir):
            hub.add(repo)
        yield hub


@pytest.fixture
def env(tmp_path, mirror):
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HF_")}
    return {**clean, "PYTHONPATH": str(ROOT), "HF_ENDPOINT": mirror.url, "HF_HOME": str(tmp_path / "hf"),
            "CCQ_EVAL_CACHE": str(tmp_path / "cache"), "HF_HUB_DISABLE_TELEMETRY": "1"}


def longbench_pin(mirror) -> dict:
    """The fixture's data.zip differs from the real one: the pin's sha256 is replaced by the fixture's."""
    data = mirror.repos[("dataset", "zai-org/LongBench")].files["data.zip"]
    return {"ccq_eval.suites.longbench.data.SOURCE.sha256": hashlib.sha256(data).hexdigest()}


def cli(env, *args, pins: dict | None = None, timeout=600) -> subprocess.CompletedProcess:
    """`ccq-eval ARGS` in a subprocess; ``pins`` replace pinned values (the real ones name real files)."""
    patch = "".join(f"import dataclasses, {k.rsplit('.', 2)[0]} as m\n"
                    f"m.{k.rsplit('.', 2)[1]} = dataclasses.replace(m.{k.rsplit('.', 2)[1]}, {k.rsplit('.', 1)[1]}={v!r})\n"
                    for k, v in (pins or {}).items())
    code = patch + f"import sys\nfrom ccq_eval.cli import main\nsys.exit(main({list(args)!r}))\n"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout,
                          cwd=ROOT)


def one_line_error(result, *fragments):
    assert result.returncode == 2, result.stderr[-2000:]
    lines = [line for line in result.stderr.splitlines() if line.startswith("ccq-eval: error:")]
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr[-2000:]
    for fragment in fragments:
        assert fragment in lines[0], lines[0]
    return lines[0]


def frozen(env, kind, name) -> tuple[list[dict], dict]:
    path = Path(env["CCQ_EVAL_CACHE"]) / kind / f"{name}.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return records, json.loads(path.with_suffix(".meta.json").read_text())["key"]


def cached_files(env, kind) -> list[str]:
    folder = Path(env["CCQ_EVAL_CACHE"]) / kind
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


# --- cleaning rules, against SCROLLS' own statement of its layout ------------------------------------

def test_scrolls_query_is_cut_at_the_first_blank_line():
    assert strip_scrolls_query("Q?\n\nPara one.\n\nPara two.", "x") == "Para one.\n\nPara two."
    with pytest.raises(sources.SourceLayoutError, match="no blank line"):
        strip_scrolls_query("no separator here", "x")


def test_deduplicate_keeps_first_occurrence_order():
    docs = [{"text": t, "name": n} for t, n in (("a", 1), ("b", 2), ("a", 3), ("c", 4), ("b", 5))]
    kept, dropped = deduplicate(docs)
    assert [d["name"] for d in kept] == [1, 2, 4] and dropped == 2


# --- data fetch, end to end -----------------------------------------------------------------------

def test_fetch_longppl_reads_the_hub_layouts_and_records_the_source(env, mirror):
    result = cli(env, "data", "fetch", "longppl")
    assert result.returncode == 0, result.stderr[-3000:]
    assert cached_files(env, "longppl") == sorted(f"{c}{ext}" for c in sources.SOURCES for ext in (".jsonl", ".meta.json"))
    govreport, key = frozen(env, "longppl", "govreport")
    assert [d["text"] for d in govreport] == GOV_DOCS
    zip_bytes = mirror.repos[("dataset", "tau/scrolls")].files["gov_report.zip"]
    assert key["source"] == {"repo": "tau/scrolls", "file": "gov_report.zip", "commit": SCROLLS_COMMIT,
                             "sha256": hashlib.sha256(zip_bytes).hexdigest(), "bytes": len(zip_bytes),
                             "commit_pinned": False, "sha256_checked_against": ["hub LFS record"]}
    assert key["member"] == "gov_report/test.jsonl" and "GovReport" in key["licence"]
    qasper, key = frozen(env, "longppl", "qasper")
    assert [d["text"] for d in qasper] == PAPERS and key["duplicates_dropped"] == 2 and key["query_stripped"]
    assert [d["text"] for d in frozen(env, "longppl", "qmsum")[0]] == MEETINGS
    assert [d["text"] for d in frozen(env, "longppl", "narrativeqa")[0]] == STORIES
    pg19, key = frozen(env, "longppl", "pg19")
    assert [d["text"] for d in pg19] == BOOKS and key["source"]["commit"] == sources.PG19_COMMIT
    code, key = frozen(env, "longppl", "codeparrot")
    assert [d["text"] for d in code] == CODE and key["source"]["file"] == "file-000000000001.json.gz"
    fetched = {path for method, path in mirror.requests if method == "GET" and "/cdn/" in path}
    served = {hashlib.sha256(d).hexdigest(): p for r in mirror.repos.values() for p, d in r.files.items()}
    names = {served[p.rsplit("/", 1)[1]] for p in fetched}
    assert not any("train-" in n or "validation-" in n or n == "file-000000000002.json.gz" for n in names), names
    assert "gov_report.zip: " in result.stdout and "no pinned commit" in result.stdout  # size said before download


def test_fetch_babilong_freezes_each_published_split_with_its_source(env, mirror):
    result = cli(env, "data", "fetch", "babilong", "--corpora", "0k,1k")
    assert result.returncode == 0, result.stderr[-3000:]
    assert cached_files(env, "babilong-published") == ["0k", "1k"]
    assert frozen(env, "babilong-published", "0k/qa20")[0][0]["input"].startswith("qa20 0k ")  # 0k: qa6-qa20 too
    rows, key = frozen(env, "babilong-published", "1k/qa2")
    assert [r["question"] for r in rows] == ["Where is John?"] * 3 and rows[0]["input"].startswith("qa2 1k ")
    served = mirror.repos[("dataset", "RMT-team/babilong-1k-samples")].files["1k/qa2-00000-of-00001.parquet"]
    assert key["source"]["commit"] == BABILONG_COMMIT and key["source"]["sha256"] == hashlib.sha256(served).hexdigest()
    assert key["source"]["file"] == "1k/qa2-00000-of-00001.parquet" and not key["source"]["commit_pinned"]
    one_line_error(cli(env, "data", "fetch", "babilong", "--corpora", "3k"), "--corpora: unknown 3k")


def test_fetch_longbench_checks_the_pinned_archive_and_each_member(env, mirror):
    refused = cli(env, "data", "fetch", "longbench", "--corpora", "qasper,trec")  # fixture zip != the real pin
    one_line_error(refused, "zai-org/LongBench@5e628be450b7", "does not match the pinned", "nothing was frozen")
    assert cached_files(env, "longbench") == []
    assert not list(Path(env["HF_HOME"]).rglob("data.zip")), "the refused download stays in the HF cache"
    result = cli(env, "data", "fetch", "longbench", "--corpora", "qasper,trec", pins=longbench_pin(mirror))
    assert result.returncode == 0, result.stderr[-3000:]
    for key, records in LONGBENCH.items():
        stored, meta = frozen(env, "longbench", key)
        assert stored == records and meta["member"] == f"data/{key}.jsonl"
        assert meta["source"]["commit"] == LONGBENCH_SOURCE.commit and meta["source"]["commit_pinned"]
        assert meta["source"]["sha256_checked_against"] == ["pinned", "hub LFS record"]


def test_corrupt_download_is_refused_and_nothing_frozen(env, mirror):
    mirror.corrupt.add("gov_report.zip")
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "govreport"),
                   "sha256", "hub LFS record", "nothing was frozen")
    assert cached_files(env, "longppl") == [] and not list(Path(env["HF_HOME"]).rglob("gov_report.zip"))
    mirror.corrupt.clear()
    assert cli(env, "data", "fetch", "longppl", "--corpora", "govreport").returncode == 0
    assert [d["text"] for d in frozen(env, "longppl", "govreport")[0]] == GOV_DOCS


def test_interrupted_download_leaves_nothing_half_written(env, mirror):
    mirror.cut.add("data/test-00000-of-00001-29a571947c0b5ccc.parquet")
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "pg19"), "emozilla/pg19", "nothing was frozen")
    assert cached_files(env, "longppl") == []
    assert not [p for p in Path(env["HF_HOME"]).rglob("*.parquet")], "no file under its final name"
    mirror.cut.clear()
    assert cli(env, "data", "fetch", "longppl", "--corpora", "pg19").returncode == 0
    assert [d["text"] for d in frozen(env, "longppl", "pg19")[0]] == BOOKS


def test_hub_unreachable_or_failing_is_one_line(env, mirror):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{probe.getsockname()[1]}"
    one_line_error(cli({**env, "HF_ENDPOINT": closed}, "data", "fetch", "longppl", "--corpora", "qasper"),
                   "tau/scrolls", closed)
    mirror.down = True
    one_line_error(cli(env, "data", "fetch", "longbench", "--corpora", "trec"), "zai-org/LongBench")
    one_line_error(cli({**env, "HF_HUB_OFFLINE": "1"}, "data", "fetch", "longppl", "--corpora", "pg19"),
                   "HF_HUB_OFFLINE")
    assert cached_files(env, "longppl") == [] and cached_files(env, "longbench") == []


def test_changed_layout_is_named(env, mirror):
    mirror.repos[("dataset", "tau/scrolls")].files["qasper.zip"] = zipped({"qasper/validation.jsonl": b"{}\n"})
    mirror.add(mirror.repos[("dataset", "tau/scrolls")])
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "qasper"), "no member 'qasper/test.jsonl'")
    assert cached_files(env, "longppl") == []


# --- --model ORG/NAME, online and offline, through the suites -----------------------------------------

def stored_run(store: Path) -> dict:
    db = sqlite3.connect(store)
    db.row_factory = sqlite3.Row
    return dict(db.execute("SELECT * FROM runs").fetchone())


def test_hub_model_runs_longppl_online_then_offline(env, mirror, tmp_path, model_dir):
    assert cli(env, "data", "fetch", "longppl", "--corpora", "pg19").returncode == 0
    store = tmp_path / "s.db"
    args = ("--suite", "longppl", "--tasks", "pg19", "--lengths", "256", "--samples", "2", "--device", "cpu")
    result = cli(env, "--model", "ccq-test/gla-tiny", *args, "--store", str(store))
    assert result.returncode == 0, result.stderr[-3000:]
    run = stored_run(store)
    assert json.loads(run["versions"])["checkpoint"] == "ccq-test/gla-tiny@" + "2" * 40
    assert run["model_spec"] == "ccq-test/gla-tiny" and run["label"] == "gla-tiny"
    downloaded = {p.name for p in Path(env["HF_HOME"]).rglob("snapshots/*/*")}
    assert "model.safetensors" in downloaded and "pytorch_model.bin" not in downloaded  # no pickle unasked
    (value,) = sqlite3.connect(store).execute("SELECT value FROM metrics WHERE metric = 'perplexity'").fetchone()
    assert value == pytest.approx(independent_perplexity(model_dir, env, 256, 2), rel=1e-5)

    mirror.down = True  # offline: the same checkpoint from the HF cache, the same commit recorded
    offline_store = tmp_path / "offline.db"
    result = cli({**env, "HF_HUB_OFFLINE": "1"}, "--model", "ccq-test/gla-tiny", *args, "--store", str(offline_store))
    assert result.returncode == 0, result.stderr[-3000:]
    assert json.loads(stored_run(offline_store)["versions"])["checkpoint"] == "ccq-test/gla-tiny@" + "2" * 40
    one_line_error(cli({**env, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "empty")}, "--model",
                       "ccq-test/gla-tiny", *args, "--store", str(tmp_path / "x.db")), "HF_HUB_OFFLINE", "no copy")
    assert not (tmp_path / "x.db").exists()


def independent_perplexity(model_dir: Path, env: dict, length: int, count: int) -> float:
    """exp(mean NLL) of the first `count` books' first `length` tokens after BOS, by one plain forward each."""
    import torch.nn.functional as F
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ccq_eval.models import register_ccq_models
    from ccq_eval.ops.cpu_forms import install_cpu_backend

    register_ccq_models()

    install_cpu_backend()
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tokenizer = AutoTokenizer.from_pretrained(model_dir)
    start = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.eos_token_id
    total, tokens = 0.0, 0
    for text in BOOKS[:count]:
        ids = torch.tensor([[start, *tokenizer(text, add_special_tokens=False)["input_ids"][:length]]])
        with torch.no_grad():
            logits = model(ids).logits[0, :-1].double()
        total += F.cross_entropy(logits, ids[0, 1:], reduction="sum").item()
        tokens += length
    return math.exp(total / tokens)


def test_hub_model_at_a_revision_runs_longbench(env, mirror, tmp_path):
    assert cli(env, "data", "fetch", "longbench", "--corpora", "trec", pins=longbench_pin(mirror)).returncode == 0
    store = tmp_path / "s.db"
    result = cli(env, "--model", "ccq-test/gla-tiny@v1", "--suite", "longbench", "--tasks", "trec", "--lengths", "512",
                 "--samples", "2", "--device", "cpu", "--store", str(store))
    assert result.returncode == 0, result.stderr[-3000:]
    run = stored_run(store)
    assert json.loads(run["versions"])["checkpoint"] == "ccq-test/gla-tiny@" + "2" * 40 and run["label"] == "gla-tiny"
    (n,) = sqlite3.connect(store).execute("SELECT n FROM metrics WHERE task = 'longbench_trec' AND is_primary = 1").fetchone()
    assert n == 2


@pytest.mark.parametrize("spec, fragments", [
    ("ccq-test/missing", ("ccq-test/missing", "no such repository")),
    ("ccq-test/gla-tiny@" + "9" * 40, ("no such revision",)),
    ("ccq-test/gla-tiny@nobranch", ("no such revision",)),
])
def test_bad_hub_model_is_one_line_and_writes_nothing(env, mirror, tmp_path, spec, fragments):
    store = tmp_path / "s.db"
    one_line_error(cli(env, "--model", spec, "--suite", "sniah", "--lengths", "1k", "--store", str(store)), *fragments)
    assert not store.exists()


def test_pickle_weights_only_with_allow_pickle(env, mirror, tmp_path):
    repo = mirror.repos[("model", "ccq-test/gla-tiny")]
    pickled = MirrorRepo("ccq-test/gla-pickle", {k: v for k, v in repo.files.items() if k != "model.safetensors"},
                         repo_type="model")
    mirror.add(pickled)
    one_line_error(cli(env, "--model", "ccq-test/gla-pickle", "--suite", "sniah", "--lengths", "1k", "--store",
                       str(tmp_path / "s.db")), "--allow-pickle")
    assert not [p for p in Path(env["HF_HOME"]).rglob("pytorch_model.bin")]


def test_sharded_hub_checkpoint_loads_online_and_offline(env, mirror, tmp_path):
    """HF-cache snapshot files are symlinks into ../../blobs/: the shard rule judges the index's names."""
    torch.manual_seed(1)
    model = tiny_model("gla")
    folder = tmp_path / "sharded"
    model.save_pretrained(folder, max_shard_size="150KB")
    byte_tokenizer().save_pretrained(folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    assert len(set(index["weight_map"].values())) >= 2
    mirror.add(MirrorRepo("ccq-test/gla-sharded", {p.name: p.read_bytes() for p in folder.iterdir()},
                          repo_type="model"))
    with torch.no_grad():
        expected = model(torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])).logits
    code = ("import sys, torch\nfrom ccq_eval.models import load_model\n"
            "m, _, p = load_model('ccq-test/gla-sharded', device='cpu')\n"
            "with torch.no_grad():\n    logits = m(torch.tensor([[3, 1, 4, 1, 5, 9, 2, 6]])).logits\n"
            "torch.save(logits, sys.argv[1])\nprint(p['weights_sha256'])\n")
    for name, extra in (("online", {}), ("offline", {"HF_HUB_OFFLINE": "1"})):
        if extra:
            mirror.down = True
        out = tmp_path / f"{name}.pt"
        result = subprocess.run([sys.executable, "-c", code, str(out)], env={**env, **extra}, capture_output=True,
                                text=True, timeout=300, cwd=ROOT)
        assert result.returncode == 0, result.stderr[-3000:]
        assert torch.equal(torch.load(out), expected), name
    assert all(p.is_symlink() for p in Path(env["HF_HOME"]).rglob("snapshots/*/model-*.safetensors"))


def test_a_hub_that_accepts_and_never_answers_fails_in_bounded_time(env, tmp_path):
    import time

    with socket.socket() as silent:  # the kernel completes the handshake; nothing ever reads or answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(64)
        hung = {**env, "HF_ENDPOINT": f"http://127.0.0.1:{silent.getsockname()[1]}", "CCQ_EVAL_HUB_TIMEOUT": "1"}
        for args in (("data", "fetch", "longppl", "--corpora", "qasper"),
                     ("--model", "ccq-test/gla-tiny", "--suite", "sniah", "--lengths", "1k", "--store",
                      str(tmp_path / "s.db"))):
            started = time.monotonic()
            line = one_line_error(cli(hung, *args, timeout=240), "did not answer within 1 s", "CCQ_EVAL_HUB_TIMEOUT")
            assert time.monotonic() - started < 120, line
    assert cached_files(env, "longppl") == [] and not (tmp_path / "s.db").exists()


@pytest.mark.parametrize("value", ["0", "-3", "soon", "1e9", "nan"])
def test_a_bad_hub_timeout_is_refused_naming_the_variable(monkeypatch, value):
    from ccq_eval.data.hub import HubError, hub_timeout_s

    monkeypatch.setenv("CCQ_EVAL_HUB_TIMEOUT", value)
    with pytest.raises(HubError, match=f"CCQ_EVAL_HUB_TIMEOUT='{value}'"):
        hub_timeout_s()
    monkeypatch.setenv("CCQ_EVAL_HUB_TIMEOUT", "2.5")
    assert hub_timeout_s() == 2.5


def test_a_hub_that_answers_html_is_one_line(env, mirror, tmp_path):
    """A captive portal or a proxy answering 200 with an HTML page, for the API and for files."""
    mirror.html = True
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "qasper"), "tau/scrolls")
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "pg19"), "emozilla/pg19")
    one_line_error(cli(env, "--model", "ccq-test/gla-tiny", "--suite", "sniah", "--lengths", "1k", "--store",
                       str(tmp_path / "s.db")), "ccq-test/gla-tiny")
    assert cached_files(env, "longppl") == [] and not (tmp_path / "s.db").exists()


def test_an_hf_home_that_is_a_file_is_one_line(env, mirror, tmp_path):
    (tmp_path / "hf-file").write_text("not a folder")
    one_line_error(cli({**env, "HF_HOME": str(tmp_path / "hf-file")}, "data", "fetch", "longppl", "--corpora", "pg19"),
                   "the HF cache cannot be written", "HF_HOME")


def test_an_archive_member_is_streamed_not_held_whole(tmp_path, monkeypatch):
    """A SCROLLS member that inflates to ~40 MB (400 records of 100 KB, mostly repeats): reading, deduplicating
    and freezing keep one record at a time, so the peak stays far below what the member expands to."""
    import tracemalloc
    from types import SimpleNamespace

    from ccq_eval.data import hub as hub_module

    big, other = words(20_000, 1), words(20_000, 2)  # ~100 KB each
    records = [{"id": f"g{i}", "pid": f"g{i}", "input": other if i in (7, 300) else big + f" {i % 3}"}
               for i in range(400)]
    archive = tmp_path / "gov_report.zip"
    archive.write_bytes(scrolls_subset("gov_report", records))
    assert archive.stat().st_size < 2_000_000  # compresses well: the expansion is what is measured
    fetched = SimpleNamespace(path=archive, repo="tau/scrolls", commit=SCROLLS_COMMIT, filename="gov_report.zip",
                              record=lambda: {"repo": "tau/scrolls"})
    monkeypatch.setattr(hub_module, "fetch_file", lambda spec, progress: fetched)
    tracemalloc.start()
    path = sources.fetch_corpus("govreport", "licence", progress=lambda *_: None)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    expanded = sum(len(json.dumps(r)) for r in records)
    assert expanded > 35_000_000 and peak < expanded / 8, (peak, expanded)
    frozen_docs = [json.loads(line)["text"] for line in path.read_text().splitlines()]
    assert frozen_docs == [big + " 0", big + " 1", big + " 2", other]  # first-seen order, each text once
    assert json.loads(path.with_suffix(".meta.json").read_text())["key"]["duplicates_dropped"] == 396


def test_pg19_parquet_is_read_a_few_books_at_a_time(tmp_path):
    """200 books of ~50 KB in row groups of 10: the whole table (~10 MB) was read at once; now arrow holds about
    one row group (parquet's unit of reading) while the books are handed on, each in order, named by its title."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    books = [words(10_000, 0) + f" book {i}" for i in range(200)]
    path = tmp_path / "pg19.parquet"
    pq.write_table(pa.table({"short_book_title": [f"t{i}" for i in range(200)], "text": books}), path,
                   row_group_size=10)
    baseline, held = pa.total_allocated_bytes(), []
    read = []
    for document in sources.read_parquet(path, sources.SOURCES["pg19"], "pg19"):
        held.append(pa.total_allocated_bytes() - baseline)
        read.append(document)
    assert [d["text"] for d in read] == books and [d["name"] for d in read] == [f"t{i}" for i in range(200)]
    total = sum(len(b) for b in books)
    assert max(held) < total / 4, (max(held), total)


def test_a_corrupt_parquet_is_one_line(tmp_path):
    path = tmp_path / "pg19.parquet"
    path.write_bytes(parquet(BOOKS)[:-40] + b"\0" * 40)
    with pytest.raises(sources.SourceLayoutError, match="not a readable parquet file"):
        list(sources.read_parquet(path, sources.SOURCES["pg19"], "pg19"))


def fetch_govreport_from(archive_bytes: bytes, tmp_path: Path, monkeypatch) -> Path:
    """`fetch_corpus("govreport")` reading the given archive as if the hub had served it."""
    from types import SimpleNamespace

    from ccq_eval.data import hub as hub_module

    archive = tmp_path / "gov_report.zip"
    archive.write_bytes(archive_bytes)
    fetched = SimpleNamespace(path=archive, repo="tau/scrolls", commit=SCROLLS_COMMIT, filename="gov_report.zip",
                              record=lambda: {"repo": "tau/scrolls"})
    monkeypatch.setattr(hub_module, "fetch_file", lambda spec, progress: fetched)
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    return sources.fetch_corpus("govreport", "licence", progress=lambda *_: None)


def test_members_named_outside_the_archive_reach_no_path(tmp_path, monkeypatch):
    """Members named ``../x`` and ``/abs/x`` beside the real one: the real one is read by its exact name, nothing
    is extracted, and no file appears outside the cache."""
    records = [{"id": f"g{i}", "pid": f"g{i}", "input": GOV_DOCS[i]} for i in range(3)]
    work = tmp_path / "work"
    work.mkdir()
    archive = zipped({"../escaped.jsonl": b"x\n", "/abs/escaped.jsonl": b"x\n", "gov_report/../../up.jsonl": b"x\n",
                      "gov_report/test.jsonl": jsonl(records)})
    monkeypatch.chdir(work)
    path = fetch_govreport_from(archive, work, monkeypatch)
    assert [json.loads(line)["text"] for line in path.read_text().splitlines()] == GOV_DOCS
    assert not list(tmp_path.rglob("escaped.jsonl")) and not list(tmp_path.rglob("up.jsonl"))
    assert not Path("/abs/escaped.jsonl").exists()


def _state_member_size(archive: bytes, member: str, size: int) -> bytes:
    """The archive with the member's uncompressed size rewritten in its local and central headers."""
    import struct

    name = member.encode()
    data = bytearray(archive)
    # (header signature, offset of the name's length, of the name, of the uncompressed size): APPNOTE 4.3.7, 4.3.12
    for signature, length_at, name_at, size_at in ((b"PK\x03\x04", 26, 30, 22), (b"PK\x01\x02", 28, 46, 24)):
        at = data.find(signature)
        while at >= 0:
            length = struct.unpack_from("<H", data, at + length_at)[0]
            if data[at + name_at: at + name_at + length] == name:
                struct.pack_into("<I", data, at + size_at, size)
            at = data.find(signature, at + 4)
    return bytes(data)


def test_a_member_that_inflates_beyond_its_stated_size_is_one_line(tmp_path, monkeypatch):
    """The headers say 1 KB; the deflated stream holds 2 MB. zipfile stops at the stated size, the CRC fails:
    one line, nothing frozen."""
    member = "gov_report/test.jsonl"
    body = jsonl([{"id": f"g{i}", "pid": f"g{i}", "input": "Q?\n\n" + words(2000, i)} for i in range(200)])
    archive = _state_member_size(zipped({member: body}), member, 1000)
    with pytest.raises(sources.hub.HubError, match="is corrupt") as error:
        fetch_govreport_from(archive, tmp_path, monkeypatch)
    assert "\n" not in str(error.value) and not list((tmp_path / "cache").rglob("*.jsonl"))


def test_a_line_beyond_any_document_is_refused(tmp_path, monkeypatch):
    from ccq_eval.data import hub as hub_module

    monkeypatch.setattr(hub_module, "MAX_LINE_CHARS", 5000)
    member = "gov_report/test.jsonl"
    body = jsonl([{"id": "a", "pid": "a", "input": "Q?\n\n" + words(100, 1)},
                  {"id": "b", "pid": "b", "input": "Q?\n\n" + words(2000, 2)}])
    with pytest.raises(sources.hub.HubError, match="line 2 is over") as error:
        fetch_govreport_from(zipped({member: body}), tmp_path, monkeypatch)
    assert "\n" not in str(error.value) and not list((tmp_path / "cache").rglob("*.jsonl"))


@pytest.mark.parametrize("fault,fragment", [("overlong", "emozilla/pg19"), ("underlong", "emozilla/pg19"),
                                            ("loop", "redirect")])
def test_a_body_other_than_announced_or_a_redirect_loop_is_one_line(env, mirror, fault, fragment):
    """A Content-Length beyond the body (the connection then closes), one short of it, and a CDN that redirects
    to itself: each ends in bounded time with one line, nothing frozen, no file under its final name; a
    healthy hub afterwards fetches the corpus."""
    pg19 = "data/test-00000-of-00001-29a571947c0b5ccc.parquet"
    getattr(mirror, fault).add(pg19)
    one_line_error(cli(env, "data", "fetch", "longppl", "--corpora", "pg19", timeout=240), fragment, "pg19")
    assert cached_files(env, "longppl") == []
    assert not [p for p in Path(env["HF_HOME"]).rglob("*.parquet")], "no file under its final name"
    getattr(mirror, fault).clear()
    assert cli(env, "data", "fetch", "longppl", "--corpora", "pg19").returncode == 0
    assert [d["text"] for d in frozen(env, "longppl", "pg19")[0]] == BOOKS


@pytest.mark.parametrize("commit", ["../../../../escaped", "A" * 40])
def test_a_hub_commit_that_is_not_a_sha_is_refused_before_any_path_is_built(env, mirror, tmp_path, commit):
    """The commit names the snapshot folder (snapshots/<commit>): a hub answering ``../..`` there would have
    files written outside the cache. Refused in one line; no snapshot folder, nothing outside HF_HOME."""
    repo = mirror.repos[("model", "ccq-test/gla-tiny")]
    mirror.add(MirrorRepo("ccq-test/odd-sha", dict(repo.files), repo_type="model", refs={"main": commit}))
    store = tmp_path / "s.db"
    one_line_error(cli(env, "--model", "ccq-test/odd-sha", "--suite", "sniah", "--lengths", "1k", "--store",
                       str(store)), "ccq-test/odd-sha", "not a 40-digit hex sha")
    assert not store.exists() and not list(Path(env["HF_HOME"]).rglob("snapshots/*"))
    assert not list(tmp_path.rglob("escaped"))


def test_an_oversized_hub_config_is_refused_before_download(env, mirror, tmp_path):
    repo = mirror.repos[("model", "ccq-test/gla-tiny")]
    config = repo.files["config.json"].decode()
    files = {**repo.files, "config.json": (config.rstrip()[:-1] + " " * (17 << 20) + "}").encode()}
    mirror.add(MirrorRepo("ccq-test/big-config", files, repo_type="model"))
    store = tmp_path / "s.db"
    one_line_error(cli(env, "--model", "ccq-test/big-config", "--suite", "sniah", "--lengths", "1k", "--store",
                       str(store)), "ccq-test/big-config", "config.json is 17 MB", "nothing was downloaded")
    assert not store.exists() and not list(Path(env["HF_HOME"]).rglob("config.json"))


def test_a_server_without_the_hubs_headers_is_named_not_called_unreachable(env, mirror, tmp_path):
    mirror.no_commit = True
    line = one_line_error(cli(env, "--model", "ccq-test/gla-tiny", "--suite", "sniah", "--lengths", "1k", "--store",
                              str(tmp_path / "s.db")), "ccq-test/gla-tiny", "without the hub's X-Repo-Commit header")
    assert "cannot be reached" not in line and not (tmp_path / "s.db").exists()


def test_a_repository_listing_a_file_outside_its_folder_names_it(env, mirror, tmp_path):
    repo = mirror.repos[("model", "ccq-test/gla-tiny")]
    mirror.add(MirrorRepo("ccq-test/escape", {**repo.files, "../../x.safetensors": b"\0" * 64}, repo_type="model"))
    one_line_error(cli(env, "--model", "ccq-test/escape", "--suite", "sniah", "--lengths", "1k", "--store",
                       str(tmp_path / "s.db")), "ccq-test/escape", "'../../x.safetensors'", "outside its own folder")
    assert not list(tmp_path.rglob("x.safetensors"))


def test_a_cached_weights_blob_cut_short_is_one_line_offline(env, mirror, tmp_path):
    args = ("--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "1", "--device", "cpu")
    assert cli(env, "--model", "ccq-test/gla-tiny", *args, "--dry-run").returncode == 0  # downloads, runs nothing
    (weights,) = Path(env["HF_HOME"]).rglob("snapshots/*/model.safetensors")
    blob = weights.resolve()
    blob.write_bytes(blob.read_bytes()[: blob.stat().st_size // 2])
    result = cli({**env, "HF_HUB_OFFLINE": "1"}, "--model", "ccq-test/gla-tiny", *args, "--store",
                 str(tmp_path / "t.db"))
    one_line_error(result, "model.safetensors: cut short", "HF_HUB_OFFLINE")
    assert [line for line in result.stderr.splitlines() if line.strip()] == [result.stderr.strip()]  # nothing else


# --- RULER's QA documents: the hub's parquet of SQuAD v2 and HotpotQA, as the rows the QA tasks read ----------

QA_ROWS = SHIPPED_RECORDS / "ruler"


def qa_parquet(name: str) -> bytes:
    """The fixture's rows laid out as the hub's parquet (answers and contexts as the hub's structs)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in (QA_ROWS / f"{name}.jsonl").read_text().splitlines()]
    if name == "squad":
        table = {"id": [f"q{i}" for i in range(len(rows))], "title": [r["title"] for r in rows],
                 "context": [r["context"] for r in rows], "question": [r["question"] for r in rows],
                 "answers": [{"text": r["answers"], "answer_start": [0] * len(r["answers"])} for r in rows]}
    else:
        table = {"id": [f"h{i}" for i in range(len(rows))], "question": [r["question"] for r in rows],
                 "answer": [r["answer"] for r in rows], "type": ["bridge"] * len(rows), "level": ["easy"] * len(rows),
                 "context": [{"title": [t for t, _ in r["context"]], "sentences": [s for _, s in r["context"]]}
                             for r in rows]}
    buffer = io.BytesIO()
    pq.write_table(pa.table(table), buffer)
    return buffer.getvalue()


def test_fetch_ruler_freezes_the_qa_rows_the_tasks_read(env, mirror):
    mirror.add(MirrorRepo("rajpurkar/squad_v2", {"squad_v2/validation-00000-of-00001.parquet": qa_parquet("squad"),
                                                 "squad_v2/train-00000-of-00001.parquet": qa_parquet("hotpotqa")},
                          commit="5" * 40))
    hotpot = qa_parquet("hotpotqa")
    pinned = "1908d6afbbead072334abe2965f91bd2709910ab"  # HotpotQA's pinned commit
    mirror.add(MirrorRepo("hotpotqa/hotpot_qa", {"distractor/validation-00000-of-00001.parquet": hotpot,
                                                 "fullwiki/validation-00000-of-00001.parquet": qa_parquet("squad")},
                          commit=pinned))
    fixture_sha = ("import dataclasses, ccq_eval.suites.ruler.qa_data as m\n"  # the real pin names the real file
                   f"m.HUB['hotpotqa'] = dataclasses.replace(m.HUB['hotpotqa'], "
                   f"sha256={hashlib.sha256(hotpot).hexdigest()!r})\n")
    result = cli_with(env, fixture_sha, "data", "fetch", "ruler")
    assert result.returncode == 0, result.stderr[-3000:]
    for name, repo, commit in (("squad", "rajpurkar/squad_v2", "5" * 40), ("hotpotqa", "hotpotqa/hotpot_qa", pinned)):
        rows, key = frozen(env, "ruler", name)
        assert rows == [json.loads(line) for line in (QA_ROWS / f"{name}.jsonl").read_text().splitlines()]
        assert key["source"]["repo"] == repo and key["source"]["commit"] == commit and "CC BY-SA" in key["licence"]
    assert frozen(env, "ruler", "squad")[1]["source"]["file"].startswith("squad_v2/validation-")
    assert frozen(env, "ruler", "hotpotqa")[1]["source"]["file"].startswith("distractor/validation-")


# --- the recall tasks' records: the reference's hub datasets, as the records the tasks read ------------------------

def recall_parquet(key: str) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [json.loads(line) for line in (SHIPPED_RECORDS / "recall" / f"{key}.jsonl").read_text().splitlines()]
    columns = sorted({k for row in rows for k in row})
    buffer = io.BytesIO()
    pq.write_table(pa.table({c: [row.get(c) for row in rows] for c in columns}), buffer)
    return buffer.getvalue()


def test_fetch_recall_freezes_each_tasks_validation_records(env, mirror):
    for key, repo in (("triviaqa", "hazyresearch/based_triviaqa"), ("nq", "hazyresearch/based_nq_2048"),
                      ("drop", "hazyresearch/based_drop"), ("swde", "hazyresearch/based-swde-v2"),
                      ("fda", "hazyresearch/based-fda"), ("squad", "hazyresearch/based-squad")):
        mirror.add(MirrorRepo(repo, {"data/validation-00000-of-00001.parquet": recall_parquet(key),
                                     "data/train-00000-of-00001.parquet": recall_parquet("drop")}, commit="7" * 40))
    result = cli(env, "data", "fetch", "recall")
    assert result.returncode == 0, result.stderr[-3000:]
    for key in ("triviaqa", "nq", "drop", "swde", "fda", "squad"):
        records, meta = frozen(env, "recall", key)
        shipped = [json.loads(line) for line in (SHIPPED_RECORDS / "recall" / f"{key}.jsonl").read_text().splitlines()]
        assert records == shipped
        assert meta["source"]["file"] == "data/validation-00000-of-00001.parquet" and meta["source"]["commit"] == "7" * 40


XET_FAILS = ("import huggingface_hub.file_download as fd\n"
             "def xet_get(**kwargs):\n"
             "    raise RuntimeError('Data processing error: CAS service error : Reqwest Error: error sending request')\n"
             "fd.xet_get = xet_get\n")


def cli_with(env, prelude: str, *args) -> subprocess.CompletedProcess:
    code = prelude + f"import sys\nfrom ccq_eval.cli import main\nsys.exit(main({list(args)!r}))\n"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=600, cwd=ROOT)


def test_large_files_come_over_the_bounded_http_client_not_xet(env, mirror):
    """The mirror announces every large file in Xet storage, as the hub does: unless the user chose otherwise, the
    download never reaches hf_xet (here one that would fail), and goes through the client whose timeouts are bound."""
    result = cli_with(env, XET_FAILS, "data", "fetch", "longppl", "--corpora", "pg19")
    assert result.returncode == 0, result.stderr[-2000:]
    assert [d["text"] for d in frozen(env, "longppl", "pg19")[0]] == BOOKS
    assert any(path.startswith("/cdn/") for _, path in mirror.requests)


def test_a_xet_failure_where_the_user_chose_xet_is_one_line(env, mirror):
    result = cli_with({**env, "HF_HUB_DISABLE_XET": "0"}, XET_FAILS, "data", "fetch", "longppl", "--corpora", "pg19")
    one_line_error(result, "emozilla/pg19", "Xet transfer", "CAS service error", "HF_HUB_DISABLE_XET")
    assert cached_files(env, "longppl") == []
