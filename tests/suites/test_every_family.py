"""Every suite (sniah, longppl, longbench, lm, efficiency) on a tiny random checkpoint of each family through the
CLI, one run per suite at a 1K budget, transformers' generate() never called: every unit complete, the stored perplexity equal to an independent
forward pass (a plain forward over [BOS] + the first L tokens), and the tables naming each row's family."""

import json
import math
import random
import sqlite3

import pytest
import torch
import torch.nn.functional as F

from ccq_eval.cli import main
from ccq_eval.suites.longppl import corpora as longppl
from tests.helpers import NEW_FAMILIES, save_checkpoint, tiny_model
from tests.suites.lm.test_lm_suite import FIXTURES
from tests.suites.longbench.test_longbench import record

FAMILIES = {  # kind -> the family the tables show
    "gla": "GLA", "gated_deltanet": "Gated DeltaNet", "transformer": "Transformer++", "ccq_gla": "CCQ-GLA",
    "ccq_gated_deltanet": "CCQ-GDN", "delta_net": "DeltaNet", "retnet": "RetNet", "hgrn2": "HGRN2",
    "mamba": "Mamba", "mamba2": "Mamba2", "samba": "Samba", "gdn_hybrid": "Gated DeltaNet hybrid (attn 1/2)",
    "llama": "Llama", "gpt_neox": "GPT-NeoX",
}
assert set(NEW_FAMILIES) <= set(FAMILIES)
LENGTH = 1024
# per suite, tasks that reach each of its code paths (the suites' own tests cover every task):
# S-NIAH 1-3; a document-policy and a concatenation-policy corpus; LongBench QA, summarisation
# (the longest generation) and code; lm-eval's rolling perplexity, last-word and multiple choice
TASKS = {"sniah": "sniah_1,sniah_2,sniah_3", "longppl": "pg19,qmsum", "longbench": "qasper,gov_report,lcc",
         "lm": "wikitext,lambada_openai,piqa", "efficiency": "cost"}
COUNTED = {"gla", "gated_deltanet", "transformer", "ccq_gla", "ccq_gated_deltanet", "llama", "gpt_neox"}
UNITS = {suite: len(tasks.split(",")) for suite, tasks in TASKS.items()}


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("every")
    rng = random.Random(0)
    (root / "lm").mkdir()
    for task, rows in FIXTURES.items():
        (root / "lm" / f"{task}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (root / "longppl").mkdir()
    for corpus in ("qmsum", "pg19"):
        text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(400))
        (root / "longppl" / f"{corpus}.jsonl").write_text(json.dumps({"text": text}) + "\n")
    (root / "longbench").mkdir()
    for key in TASKS["longbench"].split(","):
        (root / "longbench" / f"{key}.jsonl").write_text(json.dumps(record(key, 0)) + "\n")
    return root


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return tmp_path_factory.mktemp("store") / "every.db"


def direct_perplexity(model_dir, data_dir, corpus: str) -> float:
    from ccq_eval.models import load_model

    model, tok, _ = load_model(str(model_dir), device="cpu")
    [ids] = longppl.select(corpus, data_dir / "longppl" / f"{corpus}.jsonl", tok, LENGTH, 1).sequences
    x = torch.tensor([ids[: LENGTH + 1]])
    with torch.no_grad():
        logp = F.log_softmax(model(x).logits[0, :-1].double(), -1)
    return math.exp(-logp.gather(1, x[0, 1:, None]).mean().item())


@pytest.mark.e2e
@pytest.mark.parametrize("kind", list(FAMILIES))
def test_every_suite_runs_on_the_family(kind, data_dir, store, tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    from fla.models.generation_utils import FLAUnsupportedCacheGenerationMixin
    from transformers.generation import GenerationMixin

    def never(*args, **kwargs):
        raise AssertionError("ccq-eval's own suites called transformers' generate()")

    for mixin in (GenerationMixin, FLAUnsupportedCacheGenerationMixin):  # the engine (ccq_eval/generation) decodes
        monkeypatch.setattr(mixin, "generate", never)
    torch.manual_seed(0)
    model_dir = save_checkpoint(tiny_model(kind), tmp_path / kind)
    for suite, tasks in TASKS.items():
        lengths = [] if suite == "lm" else ["--lengths", str(LENGTH)]
        assert main(["--model", str(model_dir), "--suite", suite, "--tasks", tasks, "--samples", "1", *lengths,
                     "--data-dir", str(data_dir), "--store", str(store), "--device", "cpu"]) == 0, suite
    db = sqlite3.connect(store)
    units = dict(db.execute("SELECT u.suite, COUNT(*) FROM units u JOIN runs r ON r.id = u.run_id "
                            "WHERE r.label = ? AND u.status = 'complete' GROUP BY u.suite", (kind,)))
    assert units == UNITS
    stored = db.execute("SELECT m.value FROM metrics m WHERE m.label = ? AND m.task = 'longppl_pg19' "
                        "AND m.metric = 'perplexity'", (kind,)).fetchone()[0]
    direct = direct_perplexity(model_dir, data_dir, "pg19")
    assert abs(stored - direct) / direct < 1e-4
    cost = dict(db.execute("SELECT m.metric, m.value FROM metrics m WHERE m.label = ? AND m.suite = 'efficiency'",
                           (kind,)).fetchall())
    assert cost["prefill_tokens_per_s"] > 0 and cost["decode_tokens_per_s"] > 0 and cost["cache_bytes"] > 0
    if kind in COUNTED:  # the families whose cache the config counts: measured == counted
        assert cost["cache_bytes"] == cost["cache_bytes_analytic"], kind


@pytest.mark.e2e
def test_tables_show_each_row_s_family(store, tmp_path):
    """Runs after the family runs above (same module store)."""
    assert main(["tables", "--table", "longppl", "--store", str(store), "--out", str(tmp_path)]) == 0
    csv = (tmp_path / "longppl.csv").read_text().splitlines()
    assert csv[0].startswith("label,family,")
    shown = {line.split(",")[0]: line.split(",")[1] for line in csv[1:]}
    assert shown == FAMILIES
    md = (tmp_path / "longppl.md").read_text()
    assert "| family" in md and "Gated DeltaNet hybrid (attn 1/2)" in md
    assert "family" in (tmp_path / "longppl.tex").read_text()
