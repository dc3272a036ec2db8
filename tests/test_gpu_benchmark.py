"""benchmarks/gpu_throughput.py --dry-run: the GPU check script, run here at toy sizes on CPU; its
fixed output format (RESULT and RATIO lines, the JSON records) is what later runs are compared by."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULT = re.compile(r"RESULT model=(\w+) phase=(prefill|decode) batch=(\d+) tokens=(\d+) median_s=([\d.]+) "
                    r"tokens_per_s=([\d.]+)")


def test_dry_run_prints_every_family_and_ratio_in_the_fixed_format(tmp_path):
    out = tmp_path / "r.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_throughput.py"), "--dry-run", "--out",
                             str(out)], capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    rows = [RESULT.fullmatch(line).groups() for line in result.stdout.splitlines() if line.startswith("RESULT")]
    models = ["gla", "ccq_gla", "gated_deltanet", "ccq_gated_deltanet", "delta_net", "ccq_delta_net", "retnet",
              "ccq_retnet", "hgrn2", "ccq_hgrn2", "mamba", "mamba2", "samba", "gdn_hybrid", "transformer", "llama"]
    assert [(m, p) for m, p, *_ in rows] == [(m, p) for m in models for p in ("prefill", "decode")]
    for model, phase, batch, tokens, seconds, rate in rows:
        assert float(seconds) > 0 and abs(int(tokens) / float(seconds) - float(rate)) <= 0.05 + 1e-3 * float(rate)
        assert int(tokens) == int(batch) * (64 if phase == "prefill" else 4)
    ratios = [line for line in result.stdout.splitlines() if line.startswith("RATIO")]
    assert len(ratios) == 10 and all("throughput_ratio=" in r for r in ratios)  # five CCQ families x two phases
    records = json.loads(out.read_text())
    assert [(r["model"], r["phase"]) for r in records] == [(m, p) for m, p, *_ in rows]
    assert all(r["dry_run"] and r["parameters"] > 0 for r in records)


def test_without_a_gpu_it_says_so():
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_throughput.py")], capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 2 and "no CUDA device" in result.stderr and "--dry-run" in result.stderr


def test_the_script_covers_every_family_of_the_catalog():
    import importlib.util

    from ccq_eval.families import ccq_families, fla_families

    spec = importlib.util.spec_from_file_location("gpu_throughput", ROOT / "benchmarks" / "gpu_throughput.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    covered = {model_type for model_type, _ in script.MODELS.values()}
    assert set(fla_families()) | set(ccq_families()) <= covered
    assert "llama" in covered  # and a transformers model
    assert set(script.SHAPES) == set(script.TOY)  # every shape has its toy for --dry-run


def test_the_gpu_check_dry_run_runs_every_part_and_its_figures_hold(tmp_path):
    """benchmarks/gpu_check.py --dry-run: kernels (the CPU backend in float32 against float64 here, fla's CUDA
    kernels on a GPU), throughput with MFU / MBU and CCQ's ratios, S-NIAH through ccq-eval and lm-eval's RULER."""
    out = tmp_path / "check.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    records = json.loads(out.read_text())
    assert sum(1 for line in result.stdout.splitlines() if line.startswith("RESULT part=")) == len(records)
    kernels = [r for r in records if r["part"] == "kernels" and "model" in r]
    assert {(r["model"], r["dtype"]) for r in kernels} == {(m, d) for m in ("gla-tiny", "ccq-gla-tiny", "gdn-tiny",
                                                                             "ccq-gdn-tiny", "transformer-tiny")
                                                            for d in ("float32", "bfloat16")}
    for r in kernels:
        assert r["argmax_agreement"] >= (0.999 if r["dtype"] == "float32" else 0.9)
        assert r["max_rel_logit_error"] < (1e-4 if r["dtype"] == "float32" else 0.1)
        assert r["decode_vs_forward_rel_error"] < (1e-4 if r["dtype"] == "float32" else 0.1)
    rows = [r for r in records if r["part"] == "throughput" and "mfu" in r]
    assert {(r["model"], r["batch"]) for r in rows} == {(m, b) for m in ("gla", "ccq_gla", "gated_deltanet",
                                                                          "ccq_gated_deltanet", "transformer")
                                                         for b in (1, 2)}
    assert all(r["mfu"] > 0 and r["mbu"] > 0 and r["prefill_tokens_per_s"] > 0 for r in rows)
    assert len([r for r in records if "prefill_ratio" in r]) == 4  # two CCQ families x two batch sizes
    sniah = {r["suite"]: r for r in records if r["part"] == "sniah" and "suite" in r}
    assert sniah["ccq-eval S-NIAH-1"]["s_per_sample"] > 0 and sniah["ccq-eval S-NIAH-1"]["paper_sniah_projected_min"] > 0
    assert sniah["ccq-eval S-NIAH-1"]["warm_up_s"] == 0  # nothing compiles on the CPU; on CUDA the run's warm-up
    assert "wall_s" in sniah["lm-eval RULER niah_single_1"] or "not_run" in sniah["lm-eval RULER niah_single_1"]
    from ccq_eval.suites.longbench.tasks import RELEASED_SAMPLES, TASKS

    projections = {r["batch"]: r for r in records if r["part"] == "sniah" and "projection" in r}
    assert set(projections) == {1, 8}
    for batch, r in projections.items():  # at most: every prompt at 16K, every generation at its full budget
        minutes = sum(n * ((16384 - TASKS[k].max_gen) / r["prefill_tokens_per_s"]
                           + TASKS[k].max_gen * r["ms_per_step"] / 1000 / batch) for k, n in RELEASED_SAMPLES.items()) / 60
        assert r["samples"] == 3350 and abs(r["projected_min"] - minutes) < 1e-6 * minutes
    assert {r["part"] for r in records if "part_seconds" in r} == {"kernels", "throughput", "sniah"}


def test_the_gpu_check_runs_the_families_asked_for_and_refuses_an_unknown_one(tmp_path):
    out = tmp_path / "check.json"
    script = str(ROOT / "benchmarks" / "gpu_check.py")
    result = subprocess.run([sys.executable, script, "--dry-run", "--part", "throughput", "--families", "gla,ccq_gla",
                             "--out", str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    records = json.loads(out.read_text())
    assert {r["model"] for r in records if "mfu" in r} == {"gla", "ccq_gla"}
    assert [r["batch"] for r in records if "prefill_ratio" in r] == [1, 2]  # CCQ-GLA against GLA, both measured
    refused = subprocess.run([sys.executable, script, "--dry-run", "--families", "gla,mamba"], capture_output=True,
                             text=True, timeout=120, cwd=tmp_path)
    assert refused.returncode == 2 and "--families mamba: not one of" in refused.stderr
