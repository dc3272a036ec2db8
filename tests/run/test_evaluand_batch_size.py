"""--batch-size: auto resolves to 1 on the CPU (unit keys as before) and to the largest power of two that
fits on a GPU (the search, with a stand-in for 'fits in memory'); bad values are one-line errors."""

import pytest

from ccq_eval.cli import main
from ccq_eval.lm.batching import MAX_AUTO_BATCH, largest_fitting


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
                 "--device", "cpu", "--store", str(store)]) == 0
    db = sqlite3.connect(store)
    assert db.execute("SELECT batch_size FROM runs").fetchone()[0] == 1
    assert json.loads(db.execute("SELECT settings FROM units").fetchone()[0])["batch_size"] == 1
