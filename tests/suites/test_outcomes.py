"""The one aggregator every suite uses, against the textbook definitions (statistics module), and the runner
attaching label and model when it writes (drivers hand back numbers only)."""

import math
import sqlite3
import statistics

import pytest

from ccq_eval.run import RunRequest, run_suite
from ccq_eval.suites.outcomes import Metric, NoSamples, Sample, mean_metric, prediction_counts
from tests.oracle import oracle_loader


@pytest.mark.parametrize("values", [[1.0, 0.0, 1.0, 1.0], [0.25, 0.5], [3.0, 3.0, 3.0], list(range(17))])
def test_mean_metric_is_the_mean_with_its_standard_error(values):
    metric = mean_metric("score", values, is_primary=True)
    assert metric.value == pytest.approx(statistics.fmean(values))
    assert metric.stderr == pytest.approx(statistics.stdev(values) / math.sqrt(len(values)))
    assert metric.n == len(values) and metric.is_primary and metric.higher_is_better


def test_one_sample_has_no_interval_and_none_is_refused():
    assert mean_metric("nll", [2.5], higher_is_better=False) == Metric("nll", 2.5, None, 1, False, False)
    with pytest.raises(NoSamples, match="no samples to compute score over"):
        mean_metric("score", [])


def test_prediction_counts_say_how_many_were_empty():
    samples = [Sample(0, 1.0, prediction="42"), Sample(1, 0.0, prediction="  \n"), Sample(2, 0.0, prediction=None)]
    assert prediction_counts(samples) == {"n_samples": 3, "empty_predictions": 2}
    assert prediction_counts(samples[1:])["warning"] == "every prediction is empty"
    assert prediction_counts([]) == {"n_samples": 0, "empty_predictions": 0}


def test_the_runner_attaches_label_and_model_to_every_metric_row(tmp_path):
    store = tmp_path / "s.db"
    request = RunRequest(model="oracle", suite="sniah", tasks="1", lengths="1k,2k", samples=3, store=str(store),
                         label="the-label")
    assert run_suite(request, oracle_loader(tmp_path), out=lambda *_: None) == 0
    rows = sqlite3.connect(store).execute("SELECT DISTINCT label, model FROM metrics").fetchall()
    assert rows == [("the-label", "oracle")]
