"""run/kernel_warmup.py: on CUDA a run compiles fla's kernels once, before its first unit, at its longest length and
batch size, says so before and after (compiled, or found compiled in Triton's cache) and records it; on the CPU (the torch
backend) and for transformers' own models nothing compiles and nothing is said. `ccq-eval warmup` does it ahead."""

from __future__ import annotations

import pytest

from ccq_eval.generation import exercise
from ccq_eval.run import kernel_warmup
from ccq_eval.run.kernel_warmup import Compilation, announce, compiles_fla_kernels, describe


@pytest.mark.parametrize("device,model_type,expected", [
    ("cuda", "gla", True), ("cuda:1", "ccq_gated_deltanet", True), ("cuda", "mamba2", True),
    ("cpu", "gla", False), ("cuda", "llama", False), ("cuda", "oracle", False)])
def test_fla_families_on_cuda_compile_and_nothing_else_does(device, model_type, expected):
    assert compiles_fla_kernels({"device": device, "config": {"model_type": model_type}}) is expected


def test_the_line_says_what_compiled_how_long_and_where_or_that_it_was_compiled_before():
    cold = Compilation(79.4, 212, 4096, 8, "/scratch/triton")
    assert describe(cold, "NVIDIA H200", "GLA", "bfloat16") == (
        "compiled fla's kernels for NVIDIA H200, GLA, bfloat16, generation at 4096 tokens x 8: 79 s, 212 new files "
        "in /scratch/triton (later runs on this cache skip it)")
    warm = Compilation(1.25, 0, 2048, 8, "/scratch/triton", "log-likelihoods")
    assert describe(warm, "NVIDIA H200", "GLA", "bfloat16") == (
        "fla's kernels for NVIDIA H200, GLA, bfloat16, log-likelihoods at 2048 tokens x 8: already compiled "
        "(/scratch/triton); warm-up 1.2 s")
    assert announce("NVIDIA H200", "GLA", "bfloat16", 4096, 8, "/scratch/triton") == (
        "warming up fla's kernels for NVIDIA H200, GLA, bfloat16, generation at 4096 tokens x 8 (the first use on a "
        "machine compiles them, minutes; cached in /scratch/triton)")


def _recorded_forward(model, monkeypatch) -> list:
    """(input shape, packed through cu_seqlens, a cache passed in) for every forward the model makes."""
    calls, forward = [], model.forward

    def recorded(*args, **kwargs):
        ids = args[0] if args else kwargs["input_ids"]
        calls.append((tuple(ids.shape), kwargs.get("cu_seqlens") is not None,
                      kwargs.get("past_key_values") is not None))
        return forward(*args, **kwargs)

    monkeypatch.setattr(model, "forward", recorded)
    return calls


@pytest.mark.parametrize("kind", ["gla", "ccq_gla", "gated_deltanet", "transformer"])
def test_the_default_exercise_runs_the_engine_s_prefill_and_cached_decoding_steps(kind, tmp_path, monkeypatch):
    from ccq_eval.generation.exercise import DECODE_STEPS
    from tests.helpers import tiny_model

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    model = tiny_model(kind)
    calls = _recorded_forward(model, monkeypatch)
    compilation = kernel_warmup.compile_kernels(model, 40, 3)
    # the engine's prefill (generation/layouts.py): the recurrent families packed as one sequence of three, fla's
    # variable-length kernels; attention left-padded; then an untimed first step (where a CUDA graph is captured)
    prefill = ((1, 120), True, False) if kind != "transformer" else ((3, 40), False, False)
    assert calls == [prefill] + [((3, 1), False, True)] * (1 + DECODE_STEPS)
    assert compilation.new_cache_files == 0 and compilation.cache_dir == str(tmp_path / "triton")
    assert compilation.calls == "generation"


def _driver(suite_name: str, lengths=(4096,), **options):
    from ccq_eval.suites import get_suite
    from ccq_eval.suites.driver import DriverInputs

    suite = get_suite(suite_name)
    return suite.driver(DriverInputs(suite, suite.tasks, lengths, None, suite.parse_options(options)))


def test_each_suite_exercises_the_calls_its_units_make(monkeypatch):
    """Triton compiles each kernel variant apart: the warm-up must make the calls the units make."""
    from tests.helpers import tiny_model

    model = tiny_model("gla")
    calls = _recorded_forward(model, monkeypatch)
    lm = _driver("lm")
    lm.exercise(model, 40, 3)  # lm-eval's HF model: one forward of the batch, no cache passed in
    assert (lm.model_calls, calls) == ("log-likelihoods", [((3, 40), False, False)])
    calls.clear()
    longppl = _driver("longppl")  # one pass: a chunk, then a chunk continuing its cache
    longppl.exercise(model, 5000, 3)
    assert (longppl.model_calls, calls) == ("perplexity chunks with the cache",
                                            [((1, 2048), False, False), ((1, 2048), False, True)])
    calls.clear()
    _driver("longppl", engine="lm-eval").exercise(model, 40, 3)
    assert calls == [((3, 40), False, False)]
    assert _driver("sniah").model_calls == _driver("longbench").model_calls == "generation"


def test_files_triton_writes_are_counted(tmp_path, monkeypatch):
    from tests.helpers import tiny_model

    folder = tmp_path / "triton"
    monkeypatch.setenv("TRITON_CACHE_DIR", str(folder))

    def compiles(model, length, batch):  # what Triton does on a GPU: kernels land in its cache
        (folder / "abc").mkdir(parents=True)
        for name in ("k.cubin", "k.json", "autotune.json"):
            (folder / "abc" / name).write_text("x")

    model = tiny_model("gla")
    assert kernel_warmup.compile_kernels(model, 16, 1, compiles).new_cache_files == 3
    assert kernel_warmup.compile_kernels(model, 16, 1, lambda *a: None).new_cache_files == 0  # nothing new


def _evaluand(device: str, model_type: str = "gla"):
    import torch

    from ccq_eval.run import checkpoint_evaluand
    from tests.helpers import byte_tokenizer, tiny_model

    model = tiny_model(model_type)
    provenance = {"weights_sha256": f"w-{device}", "config": model.config.to_dict(), "dtype": "float32",
                  "device": device, "ccq_overrides": {}, "versions": {"torch": torch.__version__}, "batch_size": 2}
    return checkpoint_evaluand(model, byte_tokenizer(), provenance, max_length=64, batch_size=2, tokenizer_path="bytes")


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_a_run_on_cuda_compiles_before_its_first_unit_and_records_it(device, tmp_path, monkeypatch):
    from ccq_eval import machine
    from ccq_eval.run import RunRequest, run_suite
    from ccq_eval.store import Store
    from ccq_eval.suites import SUITES
    from tests.oracle import scripted_suite

    monkeypatch.setitem(SUITES, "toy", scripted_suite("toy", ("toy_a",), (16, 32)))
    real_record = machine.device_record
    monkeypatch.setattr(machine, "device_record", lambda d: {"device": str(d), "name": "Test GPU", "capability": "sm_90",
                                                             "cuda": "13.0", "memory_gib": 141.0}
                        if str(d).startswith("cuda") else real_record(d))
    exercised = []
    monkeypatch.setattr(exercise, "prefill_and_decode", lambda model, length, batch: exercised.append((length, batch)))
    lines = []
    store = tmp_path / "s.db"
    request = RunRequest(model="tiny", suite="toy", store=str(store), label="tiny", batch_size="2")
    assert run_suite(request, lambda r, n: _evaluand(device), out=lines.append) == 0
    versions = Store(store, readonly=True).reads.runs()[0].versions
    if device == "cpu":
        assert exercised == [] and "compilation" not in versions and not any("fla's kernels" in line for line in lines)
        return
    assert exercised == [(32, 2)]  # the longest length, the run's batch size
    what = "fla's kernels for Test GPU, GLA, float32, generation at 32 tokens x 2"
    assert lines[0].startswith(f"warming up {what} (the first use") and lines[1].startswith(f"{what}: already compiled")
    (compilation,) = versions["compilation"]
    assert (compilation["length"], compilation["batch"], compilation["calls"]) == (32, 2, "generation")
    assert versions["machine"]["kernel_caches"]["triton_cache_dir"]


def test_drivers_that_call_the_model_alike_warm_up_once_at_the_longest_length(monkeypatch):
    from ccq_eval import machine
    from ccq_eval.suites.driver import Driver

    monkeypatch.setattr(machine, "device_record", lambda d: {"name": "Test GPU"})
    made = []

    class Scoring(Driver):
        model_calls = "log-likelihoods"

        def exercise(self, model, length, batch):
            made.append(("scoring", length, batch))

    monkeypatch.setattr(exercise, "prefill_and_decode", lambda model, length, batch: made.append(("engine", length,
                                                                                                  batch)))
    evaluand = _evaluand("cuda")
    drivers = [(Driver(None), 1024), (Scoring(None), 2048), (Driver(None), 8192), (Scoring(None), 512)]
    lines = []
    compilations = kernel_warmup.warm_up(evaluand, drivers, 4, out=lines.append)
    assert made == [("engine", 8192, 4), ("scoring", 2048, 4)]
    assert [c.calls for c in compilations] == ["generation", "log-likelihoods"] and len(lines) == 4
    assert kernel_warmup.warm_up(_evaluand("cpu"), drivers, 4, out=lines.append) == [] and len(made) == 2


def test_warmup_on_the_cpu_says_there_is_nothing_to_compile(capsys):
    from ccq_eval.cli import main

    assert main(["warmup", "--model", "zoo:gla-tiny", "--device", "cpu"]) == 0
    assert "nothing to compile on the CPU" in capsys.readouterr().out


@pytest.mark.parametrize("argv, said", [
    (["--device", "tpu"], "device 'tpu': not a torch device"),
    (["--device", "gpu"], "device 'gpu': not a torch device"),
    (["--dtype", "float8"], "dtype 'float8': unknown"),
    (["--model", "zoo:gla-tny"], "model 'zoo:gla-tny': no zoo model of that name"),
])
def test_warmup_on_the_cpu_checks_the_model_the_device_and_the_dtype_first(argv, said, capsys):
    """A typo is refused where it is typed, not in the GPU job the warm-up prepares."""
    from ccq_eval.cli import main

    model = [] if "--model" in argv else ["--model", "zoo:gla-tiny"]
    assert main(["warmup", *model, *argv]) == 2
    captured = capsys.readouterr()
    assert said in captured.err and "\n" not in captured.err.strip() and "nothing to compile" not in captured.out


def test_warmup_on_cuda_without_a_gpu_is_one_line(capsys, monkeypatch):
    import torch

    from ccq_eval.cli import main

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["warmup", "--model", "zoo:gla-tiny", "--device", "cuda"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error: --device 'cuda': this torch sees no CUDA device") and "\n" not in err


def test_warmup_on_cuda_says_before_and_after_each_length(capsys, monkeypatch, tmp_path):
    import torch

    import ccq_eval.models
    from ccq_eval import machine
    from ccq_eval.cli import main

    monkeypatch.setenv("TRITON_CACHE_DIR", str(tmp_path / "triton"))
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    provenance = {"device": "cuda", "dtype": "bfloat16", "config": {"model_type": "gla"}}
    from tests.helpers import tiny_model

    model = tiny_model("gla")
    monkeypatch.setattr(ccq_eval.models, "load_model", lambda *a, **k: (model, None, provenance))
    monkeypatch.setattr(machine, "device_record", lambda d: {"name": "Test GPU"})
    exercised = []
    monkeypatch.setattr(exercise, "prefill_and_decode", lambda model, length, batch: exercised.append((length, batch)))
    configs = tmp_path / "fla-configs"
    assert main(["warmup", "--model", "zoo:gla-tiny", "--device", "cuda", "--lengths", "1k,2k", "--batch-size", "4",
                 "--fla-configs", str(configs)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert exercised == [(1024, 4), (2048, 4)]
    assert [line.split(" at ")[0] for line in lines[:4]] == [
        "warming up fla's kernels for Test GPU, GLA, bfloat16, generation",
        "fla's kernels for Test GPU, GLA, bfloat16, generation"] * 2
    assert "2048 tokens x 4: already compiled" in lines[3]
    # nothing was tuned here (no kernel ran): the folder is made, empty, and the line says so
    assert lines[4].startswith("wrote the configs fla's autotuner chose for 0 kernels (0 shapes) to ")
    assert lines[4].endswith(f"later jobs: FLA_CONFIG_DIR={configs} FLA_CACHE_MODE=fuzzy") and configs.is_dir()
    (tmp_path / "a-file").write_text("x")
    assert main(["warmup", "--model", "zoo:gla-tiny", "--device", "cuda", "--fla-configs",
                 str(tmp_path / "a-file" / "configs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error: --fla-configs") and "is a file" in err and "\n" not in err

    # the lm suite's calls: lm-eval's scoring forward, at most its 2048-token window
    calls = _recorded_forward(model, monkeypatch)
    assert main(["warmup", "--model", "zoo:gla-tiny", "--device", "cuda", "--lengths", "1k,4k", "--suite", "lm"]) == 0
    assert calls == [((16, 1024), False, False), ((16, 2048), False, False)] and len(exercised) == 2  # a run's default
    assert "bfloat16, log-likelihoods at 2048 tokens x 16" in capsys.readouterr().out
