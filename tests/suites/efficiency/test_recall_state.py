"""Recall against state: from a store holding the zoo's S-NIAH and efficiency results, one point per model and
length whose state is the efficiency suite's measurement (or, without one, the config's count), the mean of the
tasks, accuracy per MiB; the figure on a log axis with each CCQ model joined to its backbone."""

import csv
import io
import math

import pytest

from ccq_eval.cli import main
from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.catalogue import draw_figure, render_table
from ccq_eval.store import Store
from ccq_eval.families import cache_bytes as analytic_cache_bytes

MIB = 1 << 20
RECALL = str(SHIPPED_RECORDS)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("recall") / "s.db"
    common = ["--device", "cpu", "--store", str(path)]
    for model in ("gla-tiny", "ccq-gla-tiny"):  # a CCQ model and its backbone, measured
        assert main(["--model", f"zoo:{model}", "--suite", "sniah", "--tasks", "1,2", "--lengths", "1k",
                     "--samples", "4", *common]) == 0
        assert main(["--model", f"zoo:{model}", "--suite", "efficiency", "--lengths", "1k", "--samples", "1",
                     *common]) == 0
    assert main(["--model", "zoo:transformer-tiny", "--suite", "sniah", "--tasks", "1,2", "--lengths", "1k,2k",
                 "--samples", "4", *common]) == 0  # no efficiency run: its state is counted from its config
    assert main(["--model", "zoo:gla-tiny", "--suite", "ruler", "--tasks", "ruler_fwe", "--lengths", "1k",
                 "--samples", "2", *common]) == 0  # RULER's other tasks are retrieval too
    assert main(["--model", "zoo:gla-tiny", "--suite", "recall", "--tasks", "recall_nq", "--lengths", "1k",
                 "--samples", "2", "--data-dir", RECALL, *common]) == 0  # and the in-context recall tasks
    return Store(path, readonly=True)


def test_rulers_and_the_recall_tasks_join_the_points_with_their_own_means(store):
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(render_table(store, "recall-state")["csv"]))}
    metrics = store.reads.metrics_frame()
    fwe = metrics[(metrics.label == "gla-tiny") & (metrics.task == "ruler_fwe") & (metrics.metric == "score")]
    assert float(rows["gla-tiny · 1K"]["FWE"]) == pytest.approx(fwe.value.item(), abs=1e-3)
    # the mean over the suite's tasks the store holds (here one), and none for a point without them
    assert float(rows["gla-tiny · 1K"]["RULER VT/CWE/FWE/QA mean"]) == pytest.approx(fwe.value.item(), abs=1e-3)
    assert rows["ccq-gla-tiny · 1K"]["RULER VT/CWE/FWE/QA mean"] == ""
    nq = metrics[(metrics.label == "gla-tiny") & (metrics.task == "recall_nq") & (metrics.metric == "contains")]
    assert float(rows["gla-tiny · 1K"]["in-context recall mean"]) == pytest.approx(nq.value.item(), abs=1e-3)


def test_each_point_holds_the_efficiency_suites_bytes_or_the_configs_count(store):
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(render_table(store, "recall-state")["csv"]))}
    assert set(rows) == {"gla-tiny · 1K", "ccq-gla-tiny · 1K", "transformer-tiny · 1K", "transformer-tiny · 2K"}
    metrics = store.reads.metrics_frame()
    for label in ("gla-tiny", "ccq-gla-tiny"):
        measured = metrics[(metrics.label == label) & (metrics.metric == "cache_bytes")].value.item()
        row = rows[f"{label} · 1K"]
        assert float(row["state MiB (measured)"]) == pytest.approx(measured / MIB, rel=1e-3)
        assert row["state MiB (config)"] == ""
        scores = metrics[(metrics.label == label) & (metrics.suite == "sniah") & (metrics.is_primary == 1)]
        assert float(row["S-NIAH mean"]) == pytest.approx(scores.value.mean(), abs=1e-3)
        assert float(row["S-NIAH mean per MiB"]) == pytest.approx(scores.value.mean() / (measured / MIB), rel=1e-3)
    run = next(r for r in store.reads.runs() if r.label == "transformer-tiny")
    for length in (1024, 2048):  # the KV cache grows with L: twice the bytes at 2K
        row = rows[f"transformer-tiny · {length // 1024}K"]
        counted = analytic_cache_bytes(run.model_config, length, run.dtype)
        assert float(row["state MiB (config)"]) == pytest.approx(counted / MIB, rel=1e-3)
        assert row["state MiB (measured)"] == ""
    ccq, gla = (float(rows[f"{m} · 1K"]["state MiB (measured)"]) for m in ("ccq-gla-tiny", "gla-tiny"))
    assert ccq > gla  # CCQ's statistics: one d_k x d_k matrix and a d_k vector per head more


def test_the_figure_is_log_scaled_and_joins_ccq_to_its_backbone(store):
    fig = draw_figure(store, "recall-state")
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    joins = [line for line in ax.get_lines() if line.get_color() == "grey"]
    assert len(joins) == 1  # ccq-gla-tiny to gla-tiny at 1K; the Transformer has no pair
    xs = sorted(joins[0].get_xdata())
    metrics = store.reads.metrics_frame()
    measured = sorted(metrics[metrics.metric == "cache_bytes"].value / MIB)
    assert all(math.isclose(a, b, rel_tol=1e-6) for a, b in zip(xs, measured))
    measured_points = sum(len(c.get_offsets()) for c in ax.collections if "(reported)" not in c.get_label())
    assert measured_points == 4  # gla, ccq-gla at 1K; the Transformer at 1K and 2K
    (reported,) = [c for c in ax.collections if "(reported)" in c.get_label()]
    assert len(reported.get_offsets()) == 3  # Gated DeltaNet at 1K, 2K, 4K (S3 8K is not reported: no mean)
    assert all(math.isclose(x, GDN_1_3B_STATE / MIB, rel_tol=1e-9) for x, _ in reported.get_offsets())
    panels = [axis for axis in fig.axes if axis.get_xlabel()]
    assert len(panels) > 1 and all(axis.get_xlim() == ax.get_xlim() for axis in panels)  # one x axis to read across


# the GDN paper's 1.3B Gated DeltaNet: 21 layers x (6 heads x d_k 256 x d_v 512 float32 states + the short
# convolution over q, k (6 x 256 each) and v (6 x 512) channels, 4 positions, bf16)
GDN_1_3B_STATE = 21 * (6 * 256 * 512 * 4 + (2 * 6 * 256 + 6 * 512) * 4 * 2)


def test_reported_rows_sit_at_their_published_configurations_state(store):
    from fla.models import GatedDeltaNetConfig

    from ccq_eval.catalogue.recall_state import PUBLISHED_CONFIGS

    published, dtype = PUBLISHED_CONFIGS["Gated DeltaNet"]
    defaults = GatedDeltaNetConfig().to_dict()  # fla's defaults: the paper's 1.3B model
    assert {key: defaults[key] for key in published} == published and dtype == "bfloat16"
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(render_table(store, "recall-state", reference=True)["csv"]))}
    one = rows["Gated DeltaNet [GDN paper (ICLR 2025)] · 1K (reported)"]
    assert float(one["state MiB (config)"]) == pytest.approx(GDN_1_3B_STATE / MIB, rel=1e-3)  # the CSV rounds
    assert float(one["S-NIAH mean"]) == pytest.approx((98.4 + 100.0 + 86.6) / 3, abs=1e-3)
    assert float(one["S1"]) == 98.4
    assert rows["Gated DeltaNet [GDN paper (ICLR 2025)] · 8K (reported)"]["S-NIAH mean"] == ""  # S3 8K not reported
    assert not any("DeltaNet [" in label and "Gated" not in label for label in rows)  # DeltaNet: not counted
    plain = csv.DictReader(io.StringIO(render_table(store, "recall-state")["csv"]))
    assert not any("(reported)" in r["label"] for r in plain)  # only with --reference


def test_a_config_without_the_fields_counts_nothing():
    from ccq_eval.catalogue.recall_state import counted

    assert counted(({"model_type": "gla"}, "float32"), 1024) is None  # a hand-made store's config: no state shown
    assert counted(({"model_type": "mamba", "num_hidden_layers": 2, "hidden_size": 64}, "float32"), 1024) is None
    assert counted(None, 1024) is None
