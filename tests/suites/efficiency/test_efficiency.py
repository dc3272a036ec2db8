"""The efficiency suite: the cache bytes measured from each model's own cache object equal the count from its
config (the paper's state-size claim, family by family); the state is constant in L for the recurrent
families and linear for attention; a run stores the four measures per length, resumes, and renders."""

import json
import sqlite3

import pytest
import torch

from ccq_eval.cli import main
from ccq_eval.families import cache_bytes as analytic_cache_bytes
from ccq_eval.suites.efficiency.measure import cache_bytes, measure_once
from tests.helpers import save_checkpoint, tiny_model

FAMILIES = ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "transformer", "llama"]


@pytest.fixture(scope="module")
def cpu_backend():
    from ccq_eval.ops.cpu_forms import install_cpu_backend
    from ccq_eval.models.kv_cache import install_growing_kv_cache

    install_cpu_backend()
    install_growing_kv_cache()


def prefill_cache(model, length: int):
    ids = torch.randint(0, 260, (1, length), generator=torch.Generator().manual_seed(length))
    with torch.no_grad():
        return model(input_ids=ids, use_cache=True, logits_to_keep=1).past_key_values


@pytest.mark.parametrize("kind", FAMILIES)
@pytest.mark.parametrize("length", [64, 200])
def test_measured_cache_bytes_equal_the_count_from_the_config(cpu_backend, kind, length):
    torch.manual_seed(0)
    model = tiny_model(kind)
    expected = analytic_cache_bytes(model.config.to_dict(), length, "float32")
    assert expected is not None and cache_bytes(prefill_cache(model, length)) == expected


def test_ccq_adds_one_dk_by_dk_matrix_and_one_dk_vector_per_head(cpu_backend):
    """CCQ-GLA's cache minus GLA's: per layer a count and, per head, d_k + d_k^2 float32 numbers."""
    gla, ccq = tiny_model("gla"), tiny_model("ccq_gla")
    extra = cache_bytes(prefill_cache(ccq, 100)) - cache_bytes(prefill_cache(gla, 100))
    layers, heads = gla.config.num_hidden_layers, gla.config.num_heads
    d_k = int(gla.config.hidden_size * gla.config.expand_k) // heads
    assert extra == layers * (8 + heads * (d_k + d_k * d_k) * 4)


def test_the_state_is_constant_in_length_for_recurrent_models_and_linear_for_attention(cpu_backend):
    for kind in ("gla", "gated_deltanet", "ccq_gla"):
        model = tiny_model(kind)
        assert cache_bytes(prefill_cache(model, 50)) == cache_bytes(prefill_cache(model, 400)), kind
    model = tiny_model("transformer")
    short, long = cache_bytes(prefill_cache(model, 50)), cache_bytes(prefill_cache(model, 400))
    assert long == 8 * short


def test_cache_bytes_counts_a_tensor_once_and_a_view_as_what_it_shows():
    buffer = torch.zeros(10, 4)
    view = buffer[:3]
    assert cache_bytes({"a": view, "b": [view, (view,)]}) == 3 * 4 * 4
    assert cache_bytes([buffer, view]) == (10 + 3) * 4 * 4


def test_one_measurement_times_prefill_and_decoding(cpu_backend):
    model = tiny_model("gla")
    ids = torch.randint(0, 260, (1, 128))
    repeat = measure_once(model, ids, decode_steps=4)
    assert repeat.prefill_s > 0 and repeat.decode_s > 0
    assert repeat.cache_bytes == analytic_cache_bytes(model.config.to_dict(), 128, "float32")


def test_the_cpu_peak_repeats_because_freed_memory_is_handed_back(cpu_backend):
    """glibc keeps freed pages for reuse: without malloc_trim before each prefill, a repeat reuses what the one
    before left and its resident-set peak shrinks, often to nothing (min/max over four repeats 0.0-0.82 in 8
    trials here; with it 0.86-0.95)."""
    from ccq_eval.models.loading import load_model

    model = load_model("zoo:transformer-tiny", device="cpu").model
    ids = torch.randint(0, 256, (1, 4096), generator=torch.Generator().manual_seed(0))
    measure_once(model, ids, decode_steps=1)  # warm-up, as the suite does
    peaks = [measure_once(model, ids, decode_steps=1).peak_bytes for _ in range(4)]
    assert min(peaks) > 0.75 * max(peaks), peaks
    attention_kv = 2 * 2 * 4096 * 128 * 4  # layers x (K, V) x L x hidden x fp32: the least the prefill must hold
    assert min(peaks) > attention_kv


@pytest.mark.e2e
def test_a_run_stores_the_measures_per_length_resumes_and_renders(tmp_path, capsys):
    torch.manual_seed(0)
    folder = save_checkpoint(tiny_model("ccq_gla"), tmp_path / "ccq-gla")
    store = tmp_path / "s.db"
    argv = ["--model", str(folder), "--suite", "efficiency", "--lengths", "64,256", "--samples", "2",
            "--device", "cpu", "--store", str(store)]
    assert main(argv) == 0
    db = sqlite3.connect(store)
    rows = {(m, L): v for m, L, v in db.execute("SELECT metric, context_length, value FROM metrics")}
    for L in (64, 256):
        assert rows[("prefill_tokens_per_s", L)] > 0 and rows[("decode_tokens_per_s", L)] > 0
        assert rows[("cache_bytes", L)] == rows[("cache_bytes_analytic", L)]
    assert rows[("cache_bytes", 64)] == rows[("cache_bytes", 256)]
    settings = json.loads(db.execute("SELECT settings FROM units LIMIT 1").fetchone()[0])
    assert settings["threads"] == torch.get_num_threads() and settings["hardware"] and len(settings["prefill_s"]) == 2
    capsys.readouterr()
    assert main(argv) == 0 and "already complete" in capsys.readouterr().out
    assert main(["tables", "--table", "efficiency", "--store", str(store), "--out", str(tmp_path / "t")]) == 0
    header = (tmp_path / "t" / "efficiency.csv").read_text().splitlines()[0].split(",")
    assert "prefill tok/s 64" in header and "cache MiB (config) 256" in header
    assert main(["curves", "--figure", "efficiency", "--store", str(store), "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f" / "efficiency.png").stat().st_size > 10_000

    # its backbone beside it: --baseline gives CCQ's cost as a multiple of the backbone's, column by column
    backbone = save_checkpoint(tiny_model("gla"), tmp_path / "gla")
    assert main([*argv[:1], str(backbone), *argv[2:], "--samples", "1"]) == 0
    assert main(["tables", "--table", "efficiency", "--store", str(store), "--out", str(tmp_path / "t"),
                 "--baseline", "gla"]) == 0
    import pandas as pd

    table = pd.read_csv(tmp_path / "t" / "efficiency.csv", index_col="label")  # 3 decimals
    cache = {label: dict(db.execute("SELECT context_length, value FROM metrics WHERE label = ? AND metric = "
                                    "'cache_bytes'", (label,)).fetchall()) for label in ("ccq-gla", "gla")}
    for L in (64, 256):
        assert table.at["ccq-gla / gla", f"cache MiB {L}"] == pytest.approx(cache["ccq-gla"][L] / cache["gla"][L], abs=5e-4)
        assert table.at["ccq-gla / gla", f"cache MiB {L}"] > 1  # CCQ's statistics on top of the same state
        assert table.at["ccq-gla / gla", f"prefill tok/s {L}"] == pytest.approx(
            table.at["ccq-gla", f"prefill tok/s {L}"] / table.at["gla", f"prefill tok/s {L}"], rel=2e-3)
    assert "ccq-gla − gla" not in table.index  # costs compare as ratios, not differences


def test_suite_all_leaves_cost_to_its_own_run():
    from ccq_eval.suites import ALL_ORDER

    assert "efficiency" not in ALL_ORDER and ALL_ORDER[:4] == ("lm", "sniah", "longppl", "longbench")


def test_the_cuda_path_times_with_events_after_synchronising_and_subtracts_what_was_allocated(monkeypatch):
    """No GPU here: torch.cuda's calls replaced by a recorder that keeps a fake device's clock and allocator,
    so the CUDA branch's order (synchronise, record; reset, base) and arithmetic (ms -> s, peak - base) run."""
    from ccq_eval.suites.efficiency import measure

    calls, state = [], {"ms": 0.0, "allocated": 3_000, "peak": 3_000}

    class Event:
        def __init__(self, enable_timing=False):
            assert enable_timing
            self.at = None

        def record(self):
            calls.append("record")
            self.at = state["ms"]

        def synchronize(self):
            calls.append("event sync")

        def elapsed_time(self, end):
            return end.at - self.at

    def synchronize(device):
        calls.append("sync")

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", synchronize)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda d: state.update(peak=state["allocated"]))
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda d: state["allocated"])
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda d: state["peak"])
    cuda = torch.device("cuda", 0)
    clock, peak = measure._Clock(cuda), measure._PeakMemory(cuda)
    peak.start()
    start = clock.now()
    state["ms"] += 250.0  # the kernel ran 250 ms on the device
    state["peak"] = 3_000 + 7_168  # and allocated 7 KiB more at its peak
    end = clock.now()
    assert clock.seconds(start, end) == pytest.approx(0.25)
    assert peak.stop() == 7_168
    assert calls[:3] == ["sync", "sync", "record"] and calls[3:5] == ["sync", "record"] and "event sync" in calls
