"""Long-context perplexity: fixture corpora made here, a tiny model, the one-pass engine against
lm-eval's rolling loglikelihood and a direct forward, the shift check, selection rules, bad input."""

import json
import math
import random
import sqlite3
import types

import pytest
import torch
import torch.nn.functional as F

from ccq_eval.cli import main
from ccq_eval.suites.longppl import corpora as longppl
from ccq_eval.suites.longppl.perplexity import sequence_nll
from tests.helpers import bpe_tokenizer, byte_tokenizer, save_checkpoint, tiny_model

CORPORA = ("govreport", "qmsum", "narrativeqa", "qasper", "codeparrot", "pg19")
WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu".split()


def write_corpus(folder, name, docs):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.jsonl").write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("data")
    rng = random.Random(0)
    for name in CORPORA:
        words = 160 if longppl.CORPORA[name].policy == "document" else 40
        docs = [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(5)]
        docs.insert(1, "too short")  # skipped by the document policy, joined by the concat policy
        write_corpus(root / "longppl", name, docs)
    return root


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    torch.manual_seed(0)
    return save_checkpoint(tiny_model("ccq_gla", ccq_gate_bias_init=0.0), tmp_path_factory.mktemp("m") / "tiny")


def run(model_dir, data_dir, store, *extra):
    return main(["--model", str(model_dir), "--suite", "longppl", "--lengths", "256,384,512", "--samples", "2",
                 "--data-dir", str(data_dir), "--store", str(store), "--device", "cpu", *extra])


def perplexities(store):
    rows = sqlite3.connect(store).execute(
        "SELECT task, context_length, value FROM metrics WHERE metric = 'perplexity'").fetchall()
    return {(t, L): v for t, L, v in rows}


@pytest.mark.e2e
def test_end_to_end_into_store_table_and_curves(model_dir, data_dir, tmp_path, capsys):
    store = tmp_path / "ccq.db"
    assert run(model_dir, data_dir, store) == 0
    values = perplexities(store)
    assert set(values) == {(f"longppl_{c}", L) for c in CORPORA for L in (256, 384, 512)}
    assert all(100 < v < 600 for v in values.values())  # near the 260-token vocabulary at random init
    db = sqlite3.connect(store)
    settings = json.loads(db.execute("SELECT settings FROM units WHERE task = 'longppl_pg19' LIMIT 1").fetchone()[0])
    assert settings["selection"]["policy"] == "document" and settings["selection"]["skipped_short"] == 1
    assert settings["selection"]["sequences"] == 2 and settings["l_max"] == 512
    sums = {m: v for m, v in db.execute("SELECT metric, value FROM metrics m JOIN units u ON u.id = m.unit_id "
                                        "WHERE u.task = 'longppl_qasper' AND u.context_length = 384")}
    assert sums["tokens"] == 2 * 384 and math.exp(sums["nll_sum"] / sums["tokens"]) == pytest.approx(sums["perplexity"])
    buckets = [json.loads(f) for (f,) in db.execute(
        "SELECT s.fields FROM samples s JOIN units u ON u.id = s.unit_id WHERE u.context_length = 512")]
    assert all(sum(f["bucket_nll"]) == pytest.approx(f["nll_sum"]) for f in buckets)
    capsys.readouterr()
    assert run(model_dir, data_dir, store) == 0 and "already complete" in capsys.readouterr().out
    assert main(["tables", "--table", "longppl", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    assert "PG19 512" in (tmp_path / "t" / "longppl.md").read_text()
    assert main(["curves", "--store", str(store), "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "longppl.png").exists() and (tmp_path / "f" / "longppl.pdf").exists()


def test_one_pass_lm_eval_and_a_direct_forward_agree(model_dir, data_dir, tmp_path):
    one, rolling = tmp_path / "one.db", tmp_path / "rolling.db"
    assert run(model_dir, data_dir, one, "--tasks", "pg19,codeparrot") == 0
    assert run(model_dir, data_dir, rolling, "--tasks", "pg19,codeparrot", "--engine", "lm-eval") == 0
    a, b = perplexities(one), perplexities(rolling)
    assert a.keys() == b.keys() and all(abs(a[k] - b[k]) / a[k] < 1e-4 for k in a)
    # the direct computation: one forward over [BOS] + the first L tokens, log-softmax, shifted targets
    from ccq_eval.models import load_model

    model, tok, _ = load_model(str(model_dir), device="cpu")
    selection = longppl.select("pg19", data_dir / "longppl" / "pg19.jsonl", tok, 512, 2)
    nll_sum = 0.0
    for ids in selection.sequences:
        x = torch.tensor([ids[:384 + 1]])
        with torch.no_grad():
            logp = F.log_softmax(model(x).logits[0, :-1].double(), -1)
        nll_sum -= logp.gather(1, x[0, 1:, None]).sum().item()
    direct = math.exp(nll_sum / (2 * 384))
    assert abs(a[("longppl_pg19", 384)] - direct) / direct < 1e-4


def test_chunks_carry_the_state(model_dir):
    from ccq_eval.models import load_model

    model = load_model(str(model_dir), device="cpu").model
    ids = torch.randint(0, 256, (700,)).tolist()
    whole = sequence_nll(model, ids, chunk_size=10_000)
    chunked = sequence_nll(model, ids, chunk_size=97)
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-5)


class CopyCurrentToken(torch.nn.Module):
    """Predicts that the next token equals the current one (with certainty 1 - 1e-6)."""

    def __init__(self, vocab=260):
        super().__init__()
        self.vocab = vocab
        self.dummy = torch.nn.Parameter(torch.zeros(1))
        self.config = types.SimpleNamespace(model_type="llama", to_dict=lambda: {})  # a family whose cache takes chunks

    def forward(self, input_ids, past_key_values=None, use_cache=False):
        logits = F.one_hot(input_ids, self.vocab).float() * 20.0
        return types.SimpleNamespace(logits=logits, past_key_values=None)


def test_scoring_is_shifted_by_one_position():
    ids = [1, 5, 6, 6, 7, 8, 8, 9]  # only two of seven next-token transitions repeat the current token
    nll = sequence_nll(CopyCurrentToken(), ids, chunk_size=3)
    logp = F.log_softmax(torch.tensor([20.0] + [0.0] * 259), -1)
    hit, miss = -logp[0].item(), -logp[1].item()
    shifted = [hit if a == b else miss for a, b in zip(ids[:-1], ids[1:])]
    unshifted = [hit] * 7  # logits at t scored against token t: the copy model is always "right"
    torch.testing.assert_close(nll, torch.tensor(shifted, dtype=torch.float64))
    assert nll.sum() > 100 * sum(unshifted)


def test_selection_rules(tmp_path):
    tok = byte_tokenizer()
    write_corpus(tmp_path, "pg19", ["x" * 50, "a" * 300, "b" * 10, "c" * 400])
    doc = longppl.select("pg19", tmp_path / "pg19.jsonl", tok, 200, None)
    assert doc.names == ["doc 1", "doc 3"] and doc.skipped_short == 2
    assert all(s[0] == tok.bos_token_id and len(s) == 201 for s in doc.sequences)
    write_corpus(tmp_path, "codeparrot", ["ab" * 30, "cd" * 30, "ef" * 100])
    cat = longppl.select("codeparrot", tmp_path / "codeparrot.jsonl", tok, 100, None)
    stream = [t for s in cat.sequences for t in s[1:]]
    assert stream[60] == tok.eos_token_id and stream[121] == tok.eos_token_id  # EOS between documents
    assert len(cat.sequences) == 3 and cat.policy == "concat"  # 323 tokens -> three 100-token streams
    again = longppl.select("codeparrot", tmp_path / "codeparrot.jsonl", tok, 100, 1)
    assert len(again.sequences) == 1 and again.fingerprint != cat.fingerprint


@pytest.mark.parametrize("content,message", [
    (b'{"body": "no text field"}\n', "has no string field 'text'"),
    (b'{"text": "ok"}\n\xff\xfe broken\n', "line 2 is not UTF-8"),
    (b"not json\n", "is not JSON"),
])
def test_malformed_corpus_files(model_dir, tmp_path, capsys, content, message):
    (tmp_path / "d" / "longppl").mkdir(parents=True)
    (tmp_path / "d" / "longppl" / "pg19.jsonl").write_bytes(content)
    code = main(["--model", str(model_dir), "--suite", "longppl", "--tasks", "pg19", "--lengths", "256",
                 "--data-dir", str(tmp_path / "d"), "--store", str(tmp_path / "s.db"), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err and not (tmp_path / "s.db").exists()


def test_length_larger_than_every_document(model_dir, data_dir, tmp_path, capsys):
    code = main(["--model", str(model_dir), "--suite", "longppl", "--tasks", "pg19", "--lengths", "100k",
                 "--data-dir", str(data_dir), "--store", str(tmp_path / "s.db"), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "no document of 102400 tokens" in err and not (tmp_path / "s.db").exists()


def test_empty_lines_and_too_few_documents_are_recorded(model_dir, tmp_path):
    folder = tmp_path / "d" / "longppl"
    write_corpus(folder, "pg19", ["word " * 200, "", "   ", "word " * 10])
    store = tmp_path / "s.db"
    assert main(["--model", str(model_dir), "--suite", "longppl", "--tasks", "pg19", "--lengths", "256",
                 "--samples", "5", "--data-dir", str(tmp_path / "d"), "--store", str(store), "--device", "cpu"]) == 0
    settings = json.loads(sqlite3.connect(store).execute("SELECT settings FROM units").fetchone()[0])
    assert settings["selection"]["skipped_empty"] == 2 and settings["selection"]["skipped_short"] == 1
    assert settings["n_sequences"] == 1 and settings["samples"] == 5


def test_missing_corpora_offline(model_dir, tmp_path, capsys):
    code = main(["--model", str(model_dir), "--suite", "longppl", "--store", str(tmp_path / "s.db"), "--device", "cpu"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and "govreport, qmsum, narrativeqa, qasper, codeparrot, pg19" in err
    assert "ccq-eval data fetch longppl" in err and "\n" not in err


def test_nan_loss_fails_the_unit_naming_the_document(model_dir, data_dir, tmp_path, monkeypatch):
    import ccq_eval.suites.longppl.driver as driver

    monkeypatch.setattr(driver, "sequence_nll", lambda model, ids, chunk: torch.full((len(ids) - 1,), float("nan")))
    store = tmp_path / "s.db"
    assert run(model_dir, data_dir, store, "--tasks", "pg19") == 1
    rows = sqlite3.connect(store).execute("SELECT status, reason FROM units").fetchall()
    assert len(rows) == 3 and all(s == "failed" and "longppl_pg19 doc 0" in r and "non-finite" in r for s, r in rows)
    assert sqlite3.connect(store).execute("SELECT COUNT(*) FROM metrics").fetchone()[0] == 0


def test_data_fetch_refuses_an_unknown_corpus(capsys):
    """(The fetch itself runs against a loopback hub in tests/data/test_hub_fetch.py.)"""
    assert main(["data", "fetch", "longppl", "--corpora", "wikipedia"]) == 2
    assert "unknown wikipedia; available: govreport" in capsys.readouterr().err


def test_perplexity_intervals_by_hand_and_the_shipped_corpora(model_dir, tmp_path):
    """--ci on the longppl table: exp(mean ± t(0.975, n-1) * sd/sqrt(n)) of the per-sequence mean NLLs,
    checked against the stored per-sequence sums; the shipped corpora run with no data directory."""
    from scipy.stats import t

    store = tmp_path / "ccq.db"
    assert main(["--model", str(model_dir), "--suite", "longppl", "--tasks", "pydocs,pycode", "--lengths", "512",
                 "--samples", "4", "--store", str(store), "--device", "cpu"]) == 0
    db = sqlite3.connect(store)
    sums = [json.loads(f)["nll_sum"] for (f,) in db.execute(
        "SELECT s.fields FROM samples s JOIN units u ON u.id = s.unit_id WHERE u.task = 'longppl_pydocs'")]
    x = [v / 512 for v in sums]
    mean = sum(x) / 4
    half = t.ppf(0.975, 3) * (sum((v - mean) ** 2 for v in x) / 3) ** 0.5 / 2
    assert main(["tables", "--table", "longppl", "--ci", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    import pandas as pd

    table = pd.read_csv(tmp_path / "t" / "longppl.csv", index_col="label")
    assert list(table.columns) == ["family", "PyDocs 512", "PyCode 512", "PyDocs 512 ci_low", "PyDocs 512 ci_high",
                                   "PyCode 512 ci_low", "PyCode 512 ci_high"]
    row = table.iloc[0]
    assert row["PyDocs 512"] == pytest.approx(math.exp(mean), rel=1e-3)
    assert row["PyDocs 512 ci_low"] == pytest.approx(math.exp(mean - half), rel=1e-3)
    assert row["PyDocs 512 ci_high"] == pytest.approx(math.exp(mean + half), rel=1e-3)
    assert row["PyDocs 512 ci_low"] < row["PyDocs 512"] < row["PyDocs 512 ci_high"]
    assert "[" in (tmp_path / "t" / "longppl.md").read_text()
    per_corpus = dict(db.execute("SELECT u.task, COUNT(*) FROM samples s JOIN units u ON u.id = s.unit_id GROUP BY u.task"))
    assert per_corpus == {"longppl_pydocs": 4, "longppl_pycode": 4}


def test_the_shipped_essay_corpus_is_twelve_rotations_of_the_training_text():
    from ccq_eval.suites.sniah.haystack import DEFAULT_HAYSTACK

    docs = longppl._essay_rotations()
    text = DEFAULT_HAYSTACK.read_text(encoding="utf-8")
    assert len(docs) == 12 and len({d["text"][:200] for d in docs}) == 12
    for doc in docs:
        assert len(doc["text"]) >= 24 * 1024
        assert doc["text"][:2000] in text + "\n\n" + text  # a window of the cycled collection


def _reference_select(texts, tokenizer, l_max, count, policy):
    """The selection rules on whole-text tokenization (the definition in corpora.py's docstring)."""
    start, sequences = tokenizer.bos_token_id, []
    if policy == "document":
        for text in texts:
            ids = tokenizer(text, add_special_tokens=False)["input_ids"]
            if len(ids) >= l_max and len(sequences) < count:
                sequences.append([start, *ids[:l_max]])
        return sequences
    stream = []
    for text in texts:
        stream += tokenizer(text, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    while len(stream) >= l_max and len(sequences) < count:
        sequences.append([start, *stream[:l_max]])
        stream = stream[l_max:]
    return sequences


@pytest.mark.parametrize("policy_corpus", ["pg19", "codeparrot"])
def test_a_huge_document_is_tokenized_only_as_far_as_the_selection_reads(tmp_path, policy_corpus):
    """One 2.8 MB document for 512 tokens: only a prefix is tokenized, and the sequences equal those
    of whole-text tokenization, with a BPE tokenizer whose tokens a cut could change."""
    from ccq_eval.data import SHIPPED_ESSAYS

    tok = bpe_tokenizer()
    essays = SHIPPED_ESSAYS.read_text()
    texts = [essays[:300], essays * 200, essays[1000:5000]]  # short, huge (~2.8 MB), medium
    path = tmp_path / "c.jsonl"
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in texts))
    seen = []
    real_call = type(tok).__call__
    monkeypatch = pytest.MonkeyPatch()
    monkeypatch.setattr(type(tok), "__call__", lambda self, text, **k: seen.append(len(text)) or real_call(self, text, **k))
    try:
        selection = longppl.select(policy_corpus, path, tok, 512, 3)
    finally:
        monkeypatch.undo()
    policy = longppl.CORPORA[policy_corpus].policy
    assert selection.sequences == _reference_select(texts, tok, 512, 3, policy)
    assert len(selection.sequences) >= 1 and max(seen) < len(texts[1]) / 50  # never the whole document
