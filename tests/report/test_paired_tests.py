"""Paired tests against their own definitions (McNemar's exact test: the binomial tail of the discordant
pairs; the paired bootstrap: both corpus perplexities recomputed per resample, a plain loop here), and the
pairs table built from a store: pairing by label, per-seed rows, the mean ± sd row, p-values in the cells."""

import csv
import io
import json
import math

import numpy as np
import pytest

from ccq_eval.report import paired_tests
from ccq_eval.store import Store
from ccq_eval.report.labels import backbone_of, pairs_of
from ccq_eval.catalogue import render_table


def mcnemar_exact_by_definition(b: int, c: int) -> float:
    """McNemar's exact test: two-sided, twice the binomial(b + c, 1/2) tail at min(b, c), capped at 1."""
    n = b + c
    if n == 0:
        return 1.0
    tail = sum(math.comb(n, k) for k in range(min(b, c) + 1)) / 2**n
    return min(1.0, 2 * tail)


def test_the_sign_test_is_mcnemars_exact_test():
    for b in range(0, 26):
        for c in range(0, 26):
            assert paired_tests.sign_test_p(b, c) == pytest.approx(mcnemar_exact_by_definition(b, c), rel=1e-9, abs=1e-15)
    assert paired_tests.sign_test_p(5, 0) == pytest.approx(0.0625)  # five discordant prompts, all one way
    assert paired_tests.sign_test_p(6, 0) == pytest.approx(0.03125)


def test_mcnemar_counts_only_discordant_prompts_and_gives_the_mean_difference():
    model = np.array([100, 100, 100, 0, 0, 100, 100, 0])
    base = np.array([0, 0, 100, 0, 100, 0, 100, 0])
    result = paired_tests.mcnemar(model, base)
    diff = model - base
    assert result.delta == pytest.approx(diff.mean()) and result.n == 8
    assert result.p_value == pytest.approx(mcnemar_exact_by_definition(3, 1))
    half = 1.96 * diff.std(ddof=1) / math.sqrt(8)
    assert (result.low, result.high) == pytest.approx((diff.mean() - half, diff.mean() + half))


def bootstrap_by_loop(model_nll, base_nll, tokens, indices):
    deltas = []
    for picks in indices:
        total = sum(tokens[i] for i in picks)
        deltas.append(math.exp(sum(model_nll[i] for i in picks) / total) - math.exp(sum(base_nll[i] for i in picks) / total))
    deltas = np.array(deltas)
    below, above = (deltas <= 0).mean(), (deltas >= 0).mean()
    return np.percentile(deltas, [2.5, 97.5]), min(1.0, 2 * min(below, above))


def test_the_paired_bootstrap_matches_its_loop_definition():
    rng = np.random.default_rng(3)
    tokens = np.full(12, 1024.0)
    base = rng.normal(2.0, 0.2, 12) * 1024
    model = base + rng.normal(-0.02, 0.05, 12) * 1024
    indices = paired_tests.bootstrap_indices(12, resamples=500, seed=7)
    fast = paired_tests.perplexity_bootstrap(model, base, tokens, indices)
    (low, high), p = bootstrap_by_loop(model, base, tokens, indices)
    assert (fast.low, fast.high) == pytest.approx((low, high), rel=1e-12) and fast.p_value == pytest.approx(p)
    assert fast.delta == pytest.approx(math.exp(model.sum() / tokens.sum()) - math.exp(base.sum() / tokens.sum()))


def test_the_bootstrap_tells_no_difference_from_a_clear_one():
    tokens = np.full(10, 512.0)
    base = np.linspace(1.5, 2.5, 10) * 512
    same = paired_tests.perplexity_bootstrap(base, base, tokens)
    assert same.delta == 0 and same.p_value == 1.0
    better = paired_tests.perplexity_bootstrap(base - 0.1 * 512, base, tokens)  # lower NLL on every sequence
    assert better.delta < 0 and better.high < 0 and better.p_value < 0.01
    assert math.isnan(paired_tests.perplexity_bootstrap(base[:1], base[:1], tokens[:1]).p_value)  # one sequence: no test


def test_p_values_read_as_the_tables_show_them():
    assert [paired_tests.p_text(p) for p in (0.0004, 0.0312, 0.62, float("nan"))] == ["p<0.001", "p 0.031", "p 0.62", "p –"]


def test_pairs_come_from_the_labels_conventions():
    labels = {"gla-tiny", "ccq-gla-tiny", "gla-tiny-s1", "ccq-gla-tiny-s1", "gla-tiny+ccq0.3", "gla-tiny+ccq1-none",
              "ccq-gdn-tiny", "transformer-tiny"}
    assert pairs_of(labels) == [("ccq-gla-tiny", "gla-tiny"), ("ccq-gla-tiny-s1", "gla-tiny-s1"),
                                ("gla-tiny+ccq0.3", "gla-tiny"), ("gla-tiny+ccq1-none", "gla-tiny")]
    assert backbone_of("ccq-gdn-tiny", labels) is None  # its backbone is not in the store


def _run(store, label):
    return store.writes.begin_run({"label": label, "model_spec": label, "weights_sha256": "w", "model_config": {},
                                   "ccq_overrides": {}, "dtype": "float32", "device": "cpu", "batch_size": 1,
                                   "seeds": {}, "command_line": "", "versions": {}})


def _sniah(store, run, label, scores):
    metrics = [{"label": label, "model": label, "metric": "score", "value": float(np.mean(scores)), "n": len(scores),
                "higher_is_better": True, "is_primary": True}]
    samples = [{"idx": i, "prompt_sha256": f"prompt{i}", "score": s, "fields": {"depth": 0}} for i, s in enumerate(scores)]
    store.writes.write_unit({"run_id": run, "suite": "sniah", "task": "sniah_1", "context_length": 1024,
                             "unit_key": f"{label}-sniah", "status": "complete", "started": "2026-01-01T00:00:00",
                             "finished": "2026-01-01T00:00:00", "settings": {"haystack": None}}, metrics, samples)


def _longppl(store, run, label, nll_per_token):
    metrics = [{"label": label, "model": label, "metric": "perplexity", "value": float(np.exp(np.mean(nll_per_token))),
                "n": len(nll_per_token), "higher_is_better": False, "is_primary": True}]
    samples = [{"idx": i, "prompt_sha256": f"seq{i}", "score": float(np.exp(v)),
                "fields": {"nll_sum": v * 1024, "tokens": 1024}} for i, v in enumerate(nll_per_token)]
    store.writes.write_unit({"run_id": run, "suite": "longppl", "task": "longppl_essays", "context_length": 1024,
                             "unit_key": f"{label}-ppl", "status": "complete", "started": "2026-01-01T00:00:00",
                             "finished": "2026-01-01T00:00:00", "settings": {}}, metrics, samples)


def test_the_pairs_table_tests_each_seed_and_summarises_the_seeds(tmp_path):
    store = Store(tmp_path / "ccq.db")
    base_scores = [0.0] * 10 + [100.0] * 10
    wins = {"": 8, "-s1": 6, "-s2": 0}  # prompts CCQ answers that its backbone missed, per seed
    for seed, won in wins.items():
        base, ccq = f"gla-tiny{seed}", f"ccq-gla-tiny{seed}"
        _sniah(store, _run(store, base), base, base_scores)
        _sniah(store, _run(store, ccq), ccq, [100.0] * won + base_scores[won:])
        _longppl(store, _run(store, base + "-ppl-only"), base + "-ppl-only", [2.0] * 6)  # pairs with nothing
    ppl_base = np.linspace(1.8, 2.2, 8)
    _longppl(store, _run(store, "gla-tiny"), "gla-tiny", ppl_base)
    _longppl(store, _run(store, "ccq-gla-tiny"), "ccq-gla-tiny", ppl_base - 0.05)

    rendered = render_table(store, "pairs")
    rows = list(csv.DictReader(io.StringIO(rendered["csv"])))
    cell = {(r["model"], r["column"], r["seeds"]): r for r in rows}
    s0 = cell[("ccq-gla-tiny", "S1 1K acc", "1")]
    assert float(s0["delta"]) == pytest.approx(40.0) and float(s0["p_value"]) == pytest.approx(mcnemar_exact_by_definition(8, 0))
    assert float(cell[("ccq-gla-tiny-s2", "S1 1K acc", "1")]["p_value"]) == 1.0  # no discordant prompt
    mean = cell[("ccq-gla-tiny", "S1 1K acc", "3")]
    assert float(mean["delta"]) == pytest.approx(np.mean([40, 30, 0])) and float(mean["sd"]) == pytest.approx(np.std([40, 30, 0], ddof=1))
    ppl = cell[("ccq-gla-tiny", "Essays (seen) 1K ppl", "1")]
    expected = math.exp(np.mean(ppl_base - 0.05)) - math.exp(np.mean(ppl_base))
    assert float(ppl["delta"]) == pytest.approx(expected) and float(ppl["ci_high"]) < 0 and float(ppl["p_value"]) < 0.01
    assert not any("ppl-only" in r["model"] for r in rows)
    md = rendered["md"]
    assert "+40.0 (p 0.008)" in md and "mean ± sd over 3 seeds" in md and "+23.3 ± 20.8" in md
    assert "**" not in md  # a delta has no best to bold
    json.dumps(rendered)  # every format is text


def test_sniah_baseline_deltas_carry_mcnemars_p(tmp_path):
    store = Store(tmp_path / "ccq.db")
    _sniah(store, _run(store, "GLA"), "GLA", [0.0] * 10 + [100.0] * 10)
    _sniah(store, _run(store, "CCQ"), "CCQ", [100.0] * 20)
    md = render_table(store, "sniah", ci=True, baseline="GLA")["md"]
    assert "+50.0 [+27.5, +72.5] (p 0.002)" in md  # 50 ± 1.96 sd/sqrt(20); 10 discordant prompts, all CCQ's: 2 / 2^10


def test_the_demo_summary_names_each_pair_with_its_seed_spread_and_significant_seeds(tmp_path):
    from ccq_eval.demo_console import WIDTH, pair_lines

    store = Store(tmp_path / "ccq.db")
    base_scores = [0.0] * 10 + [100.0] * 10
    for seed, won in {"": 8, "-s1": 6, "-s2": 0}.items():
        _sniah(store, _run(store, f"gla-tiny{seed}"), f"gla-tiny{seed}", base_scores)
        _sniah(store, _run(store, f"ccq-gla-tiny{seed}"), f"ccq-gla-tiny{seed}", [100.0] * won + base_scores[won:])
    _sniah(store, _run(store, "gla-tiny+ccq0.3"), "gla-tiny+ccq0.3", [100.0] + base_scores[1:])
    lines = pair_lines(store, 1024)
    assert "  ccq-gla-tiny − gla-tiny (3 seeds): S-NIAH-1 +23.3 ± 20.8 (2/3 p<0.05)" in lines  # p 0.008, 0.031, 1
    assert "  gla-tiny+ccq0.3 − gla-tiny: S-NIAH-1 +5.0 (p 1.00)" in lines
    assert all(len(line) <= WIDTH for line in lines)
    assert pair_lines(Store(tmp_path / "empty.db"), 1024) == []


def test_perplexity_baseline_deltas_carry_the_paired_bootstrap(tmp_path):
    store = Store(tmp_path / "ccq.db")
    nll = np.linspace(1.8, 2.2, 8)
    _longppl(store, _run(store, "GLA"), "GLA", nll)
    _longppl(store, _run(store, "CCQ"), "CCQ", nll - 0.05)  # lower on every sequence
    md = render_table(store, "longppl", ci=True, baseline="GLA")["md"]
    row = next(line for line in md.splitlines() if line.startswith("| CCQ − GLA"))
    expected = math.exp(nll.mean() - 0.05) - math.exp(nll.mean())
    assert f"{expected:+.2f} [" in row and "(p<0.001)" in row
