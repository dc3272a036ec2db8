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
