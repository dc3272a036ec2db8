"""benchmarks/gpu_throughput.py --dry-run: the GPU check script, run here at toy sizes on CPU; its
fixed output format (RESULT and RATIO lines, the JSON records) is what later runs are compared by."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent


def gpu_check():
    """benchmarks/gpu_check.py as a module."""
    import importlib.util

    sys.path.insert(0, str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("gpu_check", ROOT / "benchmarks" / "gpu_check.py")
    script = importlib.util.module_from_spec(spec)
    sys.modules["gpu_check"] = script  # its dataclasses look their module up
    spec.loader.exec_module(script)
    return script
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
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--dtypes",
                             "fp32,bf16", "--out", str(out)], capture_output=True, text=True, timeout=600, cwd=tmp_path)
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
    engine = sniah["ccq-eval S-NIAH-1"]
    assert engine["ms_per_sample"] > 0 and engine["paper_sniah_projected_min"] > 0
    assert engine["unit_ms"] != round(engine["unit_ms"], -3)  # milliseconds, not whole seconds
    assert engine["warm_up_ms"] == 0  # nothing compiles on the CPU; on CUDA the run's warm-up
    assert engine["tokenizer_tokens"] == len(gpu_check().bpe_tokenizer(tmp_path / "bpe", 512))  # what the line says
    assert str(engine["tokenizer_tokens"]) in engine["tokenizer"] and engine["embedding_rows"] > engine["tokenizer_tokens"]
    assert "wall_ms" in sniah["lm-eval RULER niah_single_1"] or "not_run" in sniah["lm-eval RULER niah_single_1"]
    decoding = [line for line in result.stdout.splitlines()
                if line.startswith(("RESULT part=throughput", "RESULT part=sniah")) and "ms_per_step" in line
                or "suite=" in line and "not_run" not in line]
    assert len(decoding) == len(rows) + 2 + 2  # every batch measured, both S-NIAH routes, two projections
    assert all(" graph=eager eager_reason=not on CUDA" in line for line in decoding), decoding
    from ccq_eval.suites.longbench.tasks import RELEASED_SAMPLES, TASKS

    projections = {r["batch"]: r for r in records if r["part"] == "sniah" and "projection" in r}
    assert set(projections) == {1, 8}
    for batch, r in projections.items():  # at most: every prompt at 16K, every generation at its full budget
        minutes = sum(n * ((16384 - TASKS[k].max_gen) / r["prefill_tokens_per_s"]
                           + TASKS[k].max_gen * r["ms_per_step"] / 1000 / batch) for k, n in RELEASED_SAMPLES.items()) / 60
        assert r["samples"] == 3350 and abs(r["projected_min"] - minutes) < 1e-6 * minutes
    assert {r["part"] for r in records if "part_ms" in r} == {"own_kernels", "kernels", "throughput", "sniah"}
    (warned,) = [r for r in records if r["part"] == "warnings"]
    assert warned["count"] >= warned["distinct"] == sum(1 for line in result.stdout.splitlines()
                                                         if line.startswith("# warning, "))


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


def test_a_budget_runs_what_fits_most_value_per_minute_first():
    """550 s (a 15-minute device window less its start) holds, on the predictions for a cold H200: GLA's and CCQ-GLA's
    throughput and S-NIAH-1 at 4K; every other figure is skipped by name."""
    script = gpu_check()
    figures = script.plan(script.PARTS, (), budget=550)
    assert {f.name for f in figures} == {f.name for f in script.PLAN}
    per_minute = [f.per_minute() for f in figures]
    assert per_minute == sorted(per_minute, reverse=True)
    left, ran = 550.0, []
    for figure in figures:
        if script.fits(figure, left, dry_run=False):
            ran.append(figure.name)
            left -= figure.cold_s
    assert {"throughput:gla", "throughput:ccq-gla", "sniah"} <= set(ran)
    assert ran.index("throughput:gla") < ran.index("sniah")  # S-NIAH finds GLA's kernels compiled
    assert sum(f.cold_s for f in script.PLAN if f.name in ran) <= 550
    assert script.fits(figures[0], 10_000, dry_run=False) and not script.fits(figures[0], 10, dry_run=False)
    kernels = next(f for f in script.PLAN if f.part == "kernels")
    assert script.fits(kernels, kernels.cold_s, False, 1) and not script.fits(kernels, kernels.cold_s, False, 2)


def test_a_dry_run_with_a_budget_names_what_it_skipped(tmp_path, capsys):
    out = tmp_path / "check.json"
    result = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--budget", "40",
                             "--part", "all", "--out", str(out)], capture_output=True, text=True, timeout=300,
                            cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    records = json.loads(out.read_text())
    skipped = [r["skipped"] for r in records if r["part"] == "plan"]
    assert "sniah" in skipped  # predicted at 60 s on the CPU
    assert not any(r.get("suite") for r in records)
    assert {r["model"] for r in records if "mfu" in r} >= {"gla", "ccq_gla"}
    script = gpu_check()
    for argv, said in ((["--budget", "0"], "--budget 0: give the seconds"), (["--budget", "x"], "invalid float value"),
                       (["--dtypes", "fp16"], "--dtypes 'fp16'")):
        with pytest.raises(SystemExit) as refused:
            script.main(["--dry-run", *argv])
        assert refused.value.code == 2 and said in capsys.readouterr().err


def test_a_check_stopped_part_way_keeps_every_figure_it_printed(tmp_path):
    """Killed (as a device window's limit kills it) after its fifth figure: the JSON holds the figures printed."""
    import signal

    out = tmp_path / "check.json"
    process = subprocess.Popen([sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--dry-run", "--part",
                                "throughput", "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, cwd=tmp_path)
    printed = []
    try:
        for line in process.stdout:
            if line.startswith("RESULT "):
                printed.append(line)
            if len(printed) == 5:
                process.send_signal(signal.SIGKILL)
                break
    finally:
        process.kill()
        process.wait(timeout=60)
    records = json.loads(out.read_text())
    assert len(records) == 5 and all(r["part"] == "throughput" for r in records)
    assert [r.get("model") for r in records[2:]] == ["gla"] * 3  # the ceilings, GLA's compile times, batch 1 and 2
    assert not list(tmp_path.glob("*.part"))


REFUSE_LM_EVAL = """
import importlib.abc, runpy, sys

class Refuse(importlib.abc.MetaPathFinder):  # a bare GPU image: no lm-eval
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "lm_eval":
            raise ModuleNotFoundError(f"No module named {name!r}")

sys.meta_path.insert(0, Refuse())
sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")
"""


def test_on_a_bare_image_the_check_says_what_did_not_run_and_goes_on(tmp_path):
    """--budget order with lm-eval not importable: the own kernels first, S-NIAH says not_run, and CCQ-GLA's
    throughput (planned after it) still runs; exit 0."""
    out = tmp_path / "check.json"
    result = subprocess.run([sys.executable, "-c", REFUSE_LM_EVAL, str(ROOT / "benchmarks" / "gpu_check.py"),
                             "--dry-run", "--budget", "550", "--families", "gla,ccq-gla", "--out", str(out)],
                            capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    records = json.loads(out.read_text())
    assert records[0]["part"] == "own_kernels" and records[0]["in_place"] is True
    kernels = [r for r in records if r["part"] == "own_kernels" and "kernel" in r]
    assert {r["family"] for r in kernels} == {"gla", "gated_deltanet", "delta_net"}  # CCQ's is Triton-only
    assert all(r["path"] == "own" and r["max_rel_difference"] <= r["tolerance"] for r in kernels)
    (sniah,) = [r for r in records if r["part"] == "sniah"  and "part_ms" not in r]
    assert sniah["not_run"] == "lm_eval not importable here"
    order = [r.get("model") or r["part"] for r in records if "mfu" in r or r["part"] == "sniah" and "not_run" in r]
    assert order.index("sniah") < order.index("ccq_gla"), order
    engine = [r for r in records if r.get("engine")]
    assert {r["model"] for r in engine} == {"gla", "ccq_gla"}
    assert all(r["requests_equal"] == r["requests"] for r in engine), engine


def test_the_model_ledger_prices_the_whole_model_in_gpu_checks_terms():
    """benchmarks/model_ledger.py at toy shapes: a model is one block plus (layers - 1) more, every kernel costs at
    least its launch floor, and the ratios are the rates gpu_check prints (CCQ's over its backbone's)."""
    import importlib.util

    from ccq_eval.ops.cpu_forms import install_cpu_backend

    install_cpu_backend()
    spec = importlib.util.spec_from_file_location("model_ledger", ROOT / "benchmarks" / "model_ledger.py")
    ledger = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ledger)
    one = {f: 1.0 for f in ledger.FIELDS}
    two = {f: 3.0 for f in ledger.FIELDS}
    block, model = ledger.whole(one, two, 24)
    assert block["ops"] == 2.0 and model["ops"] == 1.0 + 23 * 2.0
    figures = ledger.report("gla", 2, 64, 4, torch.float32, toy=True)
    for name in ("gla", "ccq_gla"):
        f = figures[name]
        assert f["prefill_ms"] / 1e3 >= f["prefill_launches"] * ledger.LAUNCH_FLOOR["eager"] * (1 - 1e-9)
        assert f["ms_per_step"] / 1e3 >= f["step_launches"] * ledger.LAUNCH_FLOOR["graph"] * (1 - 1e-9)
        assert f["ms_per_step"] > f["layer_step_ms"] > 0 and f["prefill_launches"] > 0
    ratios = figures["ratios"]
    assert ratios["prefill_rate_ratio"] == pytest.approx(figures["gla"]["prefill_ms"] / figures["ccq_gla"]["prefill_ms"])
    assert 0 < ratios["decode_rate_ratio"] < 1 < ratios["layer_step_time_ratio"]
