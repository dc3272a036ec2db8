"""`ccq-eval --suite multi_niah` end to end: scripted oracles through the suite's generate stage (every value, none, half of them),
RULER's string_match_all per sample, the early-stop rule over every expected value, the frozen data, and a zoo
model through the command line."""

import json
import sqlite3

import pytest

from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites.multi_niah import data as multi
from ccq_eval.suites.sniah.scoring import ruler_string_match
from tests.oracle import NEEDLE, oracle_loader

TASKS = tuple(multi.VARIANTS)


def unit_metrics(store) -> dict:
    db = sqlite3.connect(store)
    rows = db.execute("SELECT u.task, m.metric, m.value FROM metrics m JOIN units u ON m.unit_id = u.id").fetchall()
    return {(task, metric): value for task, metric, value in rows}


def stored_samples(store) -> list[tuple]:
    db = sqlite3.connect(store)
    return db.execute("SELECT u.task, s.score, s.target, s.prediction, s.fields FROM samples s "
                      "JOIN units u ON s.unit_id = u.id").fetchall()


@pytest.mark.parametrize("wrong,share,expected", [(False, 1.0, 100.0), (True, 1.0, 0.0)])
def test_an_oracle_scores_100_and_a_wrong_one_0_on_every_task(tokenizer_dir, tmp_path, wrong, share, expected):
    store = tmp_path / "ccq.db"
    request = RunRequest(model="oracle", suite="multi_niah", lengths="1k", samples=6, store=str(store), label="oracle")
    assert run_suite(request, oracle_loader(tokenizer_dir, wrong, share), out=lambda *_: None) == 0
    metrics = unit_metrics(store)
    assert {t: metrics[(t, "score")] for t in TASKS} == {t: expected for t in TASKS}
    assert {t: metrics[(t, "all_found")] for t in TASKS} == {t: 6.0 if expected else 0.0 for t in TASKS}
    samples = stored_samples(store)
    assert len(samples) == 5 * 6
    for task, score, target, prediction, fields in samples:
        fields = json.loads(fields)
        answers = target.split(", ")
        assert len(answers) == len(fields["depths"]) == len(fields["depths_used"]) == (
            4 if task in ("niah_multivalue", "niah_multiquery") else 1)
        assert score == 100 * ruler_string_match(prediction, answers)  # the stored score is RULER's, recomputed
        assert all(0 <= d <= 100 for d in fields["depths"] + fields["depths_used"])
        assert len(fields["keys"].split(", ")) == (4 if task == "niah_multiquery" else 1)
        assert fields["prompt_tokens"] + 128 <= 1024


def test_half_the_values_score_50_on_the_multi_value_tasks(tokenizer_dir, tmp_path):
    """RULER's string_match_all is the share of expected values found: 2 of 4 is 50, not 0 or 100."""
    store = tmp_path / "ccq.db"
    request = RunRequest(model="oracle", suite="multi_niah", tasks="niah_multivalue,niah_multiquery", lengths="1k",
                         samples=4, store=str(store), label="half")
    assert run_suite(request, oracle_loader(tokenizer_dir, share=0.5), out=lambda *_: None) == 0
    metrics = unit_metrics(store)
    assert metrics[("niah_multivalue", "score")] == metrics[("niah_multiquery", "score")] == 50.0
    assert metrics[("niah_multivalue", "all_found")] == 0.0
    assert {score for _, score, *_ in stored_samples(store)} == {50.0}


def test_early_stop_waits_for_every_expected_value(tokenizer_dir):
    """A row stops once every value is out (string_match_all is 1 then, on every continuation), not at the first."""
    from ccq_eval.suites.multi_niah.driver import MultiNiahDriver
    from tests.helpers import byte_tokenizer

    record = multi.generate("niah_multivalue", byte_tokenizer(), 1024, 1, seed=0, haystack=_essays())[0]
    (ask,) = MultiNiahDriver(None).asks(record.get("task", "niah_multivalue"), [record])
    values = record["outputs"]
    assert not ask.stop_when(" " + ", ".join(values[:3]))
    assert ask.stop_when(" " + ", ".join(values) + ".")
    # the answers' NLL is scored on every value, as one continuation
    assert ask.score == " " + ", ".join(values)


def _essays():
    from ccq_eval.suites.sniah.haystack import load_haystack

    return load_haystack()


def test_data_is_frozen_once_and_keyed_apart_from_sniahs(tmp_path, monkeypatch):
    from ccq_eval.suites.sniah import data as sniah
    from tests.helpers import byte_tokenizer

    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    tok, hay = byte_tokenizer(), _essays()
    first, fingerprint, reused = multi.load_or_generate("niah_multikey_1", tok, 1024, 3, 0, hay)
    again, fingerprint_again, reused_again = multi.load_or_generate("niah_multikey_1", tok, 1024, 3, 0, hay)
    assert (reused, reused_again) == (False, True) and again == first and fingerprint_again == fingerprint
    key = multi.dataset_key("niah_multikey_1", "tok", 1024, 3, 0, hay)
    assert multi.dataset_path(key).parent.name == "multi_niah"
    assert multi.dataset_path(key) != sniah.dataset_path(sniah.dataset_key("sniah_2", "tok", 1024, 3, 0, hay))
    assert multi.generate("niah_multikey_1", tok, 1024, 3, 1, hay) != first  # another seed, other samples


def test_every_task_draws_its_needles_as_ruler_configures_it():
    from tests.helpers import byte_tokenizer

    for task, variant in multi.VARIANTS.items():
        for record in multi.generate(task, byte_tokenizer(), 2048, 5, seed=3, haystack=_essays()):
            found = NEEDLE.findall(record["input"])
            asked = record["keys"]
            mine = [(k, v) for k, v in found if k in asked]
            assert len(mine) == variant.queries * variant.values  # each asked key's values, once
            assert [v for k in asked for kk, v in mine if kk == k] == record["outputs"] or variant.values > 1
            assert sorted(record["outputs"]) == sorted(v for _, v in mine)
            if variant.haystack == "essay":
                assert len(found) == variant.needles and len({k for k, _ in found}) == variant.key_count
                assert len(set(record["depths"])) == len(record["depths"])  # distinct depths
            else:
                assert len(found) == record["haystack_units"] + variant.needles


def test_a_length_that_cannot_hold_the_prompt_is_refused_in_one_line(tmp_path, capsys):
    from ccq_eval.cli import main

    store = tmp_path / "s.db"
    assert main(["--model", "zoo:transformer-tiny", "--suite", "multi_niah", "--tasks", "niah_multiquery",
                 "--lengths", "400", "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error: --lengths: 400 tokens cannot hold every niah_multiquery prompt (")
    assert len(err.splitlines()) == 1 and not store.exists()


@pytest.mark.e2e
def test_a_zoo_model_runs_every_task_through_the_command_line(tmp_path):
    from ccq_eval.cli import main

    store = tmp_path / "ccq.db"
    assert main(["--model", "zoo:transformer-tiny", "--suite", "multi_niah", "--lengths", "1k", "--samples", "2",
                 "--store", str(store)]) == 0
    metrics = unit_metrics(store)
    assert {t for t, m in metrics if m == "score"} == set(TASKS)
    for task, score, target, prediction, fields in stored_samples(store):
        assert score == 100 * ruler_string_match(prediction, target.split(", "))
        assert json.loads(fields)["answer_nll"] > 0  # the model scored its answers


@pytest.fixture(scope="module")
def bpe_with_bos():
    """A real subword tokenizer: byte-level BPE trained on the shipped essays, with a BOS token added to every
    encoding (as SentencePiece Llama tokenizers add theirs)."""
    from tests.fixtures.ruler.make_fixtures import subword_tokenizer_with_bos

    return subword_tokenizer_with_bos()


@pytest.mark.parametrize("task", TASKS)
def test_a_subword_tokenizer_with_bos_fills_the_budget_and_never_exceeds_it(bpe_with_bos, task):
    """The budget is counted as the model will read the prompt: BOS included, subword tokens, not bytes."""
    assert bpe_with_bos("x")["input_ids"][0] == bpe_with_bos.bos_token_id
    for record in multi.generate(task, bpe_with_bos, 1024, 4, seed=0, haystack=_essays()):
        tokens = len(bpe_with_bos(record["input"] + " " + record["gen_prefix"])["input_ids"])
        assert tokens + 128 <= 1024 and record["length"] == tokens + 128
        assert tokens >= 1024 - 128 - 60  # filled: one more haystack unit (a line, a few words) would not fit
        assert all(value in record["input"] for value in record["outputs"])
