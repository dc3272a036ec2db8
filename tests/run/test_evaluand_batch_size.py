"""--batch-size: none given is 1 on the CPU and 16 on CUDA; auto resolves to 1 on the CPU (unit keys as before) and
to the largest power of two whose engine prefill fits on a GPU (the search, with a stand-in for 'fits in memory');
bad values are one-line errors."""

import pytest

from ccq_eval.cli import main
from ccq_eval.run.batching import MAX_AUTO_BATCH, largest_fitting


@pytest.mark.parametrize("limit, expected", [(0, 1), (1, 1), (2, 2), (7, 4), (64, 64), (1000, MAX_AUTO_BATCH)])
def test_largest_fitting_power_of_two(limit, expected):
    tried = []

    def fits(batch):
        tried.append(batch)
        return batch <= limit

    assert largest_fitting(fits) == expected
    assert tried == [2 ** i for i in range(1, len(tried) + 1)]  # doubling, stopping at the first failure


@pytest.mark.parametrize("value", ["0", "-2", "many", "1.5"])
def test_bad_batch_sizes_are_refused(value, capsys):
    assert main(["--model", "m", "--suite", "sniah", "--batch-size", value]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"ccq-eval: error: --batch-size {value}: must be an integer in [1, 4096] or auto"


def test_auto_on_cpu_is_one_and_is_what_the_run_records(tmp_path, tokenizer_dir):
    import json
    import sqlite3

    from tests.helpers import save_checkpoint, tiny_model

    model = save_checkpoint(tiny_model("gla"), tmp_path / "m")
    store = tmp_path / "s.db"
    assert main(["--model", str(model), "--suite", "sniah", "--tasks", "1", "--lengths", "1k", "--samples", "2",
                 "--device", "cpu", "--batch-size", "auto", "--store", str(store)]) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT batch_size FROM runs").fetchone()[0] == 1
    assert json.loads(db.execute("SELECT settings FROM units").fetchone()[0])["batch_size"] == 1


def test_no_batch_size_given_is_one_on_the_cpu_and_sixteen_on_cuda():
    from ccq_eval.run.batching import CUDA_DEFAULT, default_batch_size

    assert default_batch_size("cpu") == 1 and CUDA_DEFAULT == 16
    assert default_batch_size("cuda") == default_batch_size("cuda:1") == CUDA_DEFAULT


def test_superscript_digits_are_refused_in_one_line(capsys):
    assert main(["--model", "m", "--suite", "sniah", "--batch-size", "8\u00b2"]) == 2
    assert capsys.readouterr().err.strip() == "ccq-eval: error: --batch-size 8\u00b2: must be an integer in [1, 4096] or auto"


def test_auto_probes_with_the_engine_s_prefill_and_is_timed_beside_the_warm_up(monkeypatch):
    """On a GPU (a stand-in: a model that says it is on CUDA, and memory that holds 8 rows of the longest prompt),
    auto doubles through the engine's own prefill (packed, padded to its totals) and the probe is a warm-up record."""
    import torch

    from ccq_eval.generation import layouts
    from ccq_eval.run import evaluand
    from tests.helpers import tiny_model

    model = tiny_model("gla")
    seen = []

    def prefill(self, prompts):
        seen.append((self.pad, len(prompts), {len(p) for p in prompts}))
        if len(prompts) > 8:
            raise torch.cuda.OutOfMemoryError("stand-in")
        return None, None

    monkeypatch.setattr(type(model), "device", property(lambda self: torch.device("cuda")))
    monkeypatch.setattr(layouts.Independent, "prefill", prefill)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda *a: None)
    import ccq_eval.generation.exercise as exercise

    monkeypatch.setattr(exercise, "random_prompts", lambda m, length, batch: torch.zeros(batch, length, dtype=torch.long))
    probe = evaluand._probe(model, 300)
    assert probe.batch == 8 and probe.length == 300 and probe.calls == "auto batch size probe" and probe.seconds >= 0
    assert seen == [(True, 2, {300}), (True, 4, {300}), (True, 8, {300}), (True, 16, {300})]
