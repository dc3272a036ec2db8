"""`ccq-eval warmup`: fla's kernels compiled and tuned for a checkpoint ahead of its runs (run/kernel_warmup.py), into
Triton's on-disk cache: on a cluster, one job fills a shared TRITON_CACHE_DIR and the job array after it starts with
every kernel compiled."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import lengths_text, number
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "warmup"
DEFAULT_LENGTHS = (1024, 2048, 4096, 8192)


def add(subparsers) -> None:
    warmup = subparsers.add_parser(NAME, help="compile fla's kernels for a checkpoint ahead of its runs (CUDA; the "
                                              "cache is Triton's, TRITON_CACHE_DIR)")
    warmup.add_argument("--model", required=True, help="checkpoint folder, zoo:<name>, or ORG/NAME[@REVISION]")
    warmup.add_argument("--lengths", default=lengths_text(DEFAULT_LENGTHS),
                        help=f"the context lengths the runs will use (default {lengths_text(DEFAULT_LENGTHS)})")
    warmup.add_argument("--batch-size", type=number(int, 1, 4096, "a batch size"),
                        help="the runs' batch size (default: a run's default, 16 on CUDA)")
    warmup.add_argument("--suite", default="sniah",
                        help="the suite the runs will run (its calls are what compiles: the engine's generation, "
                             "lm-eval's scoring forward or perplexity chunks; default sniah), or all")
    warmup.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda[:N]")
    warmup.add_argument("--dtype", help="float32, bfloat16 or float16 (default: bfloat16 on CUDA)")
    warmup.add_argument("--allow-pickle", action="store_true", help="allow pickle weights (they can run code)")
    warmup.add_argument("--fla-configs", metavar="DIR",
                        help="also write the configs fla's autotuner chose into DIR (merged with what is there), for "
                             "later jobs to load with FLA_CONFIG_DIR=DIR FLA_CACHE_MODE=fuzzy instead of autotuning")


def handle(args) -> int:
    import torch

    from ccq_eval.suites.base import parse_lengths

    lengths = parse_lengths(args.lengths)
    drivers = _drivers(args.suite, lengths)
    if args.fla_configs:
        check_output_folder(Path(args.fla_configs), "--fla-configs")
    if args.device != "auto" and _device_type(args.device) == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {args.device!r}: this torch sees no CUDA device; use a GPU machine")
    from ccq_eval.models.loading import check_model

    # the model, its files, the device and the dtype are checked here as a run would check them, whatever the device:
    # a typo is refused now, not in the GPU job this warm-up prepares
    device, dtype = check_model(args.model, args.device, args.dtype, args.allow_pickle)
    if device.type != "cuda":
        print(f"{args.model}: checked ({str(dtype).removeprefix('torch.')} on {device}); nothing to compile on the "
              "CPU: ccq-eval's torch backend runs fla's families there (their Triton kernels compile on a GPU: "
              "--device cuda)")
        return 0
    return _compile(args, str(device), lengths, drivers)


def _device_type(name: str) -> str | None:
    import torch

    try:
        return torch.device(name).type
    except RuntimeError:
        return None


def _drivers(name: str, lengths: tuple[int, ...]) -> list:
    """The drivers of the suites a run of ``name`` would plan, with their defaults (their calls are what compiles)."""
    from ccq_eval.suites import ALL_ORDER, get_suite
    from ccq_eval.suites.driver import DriverInputs

    suites = [get_suite(n) for n in (ALL_ORDER if name == "all" else (name,))]
    return [suite.driver(DriverInputs(suite, suite.tasks, lengths, None, suite.parse_options({}))) for suite in suites]


def _compile(args, device: str, lengths: tuple[int, ...], drivers: list) -> int:
    from ccq_eval.families import family_name
    from ccq_eval.models import load_model
    from ccq_eval.run.kernel_warmup import call_key, compile_and_say, compiles_fla_kernels

    model, _, provenance = load_model(args.model, device=device, dtype=args.dtype, allow_pickle=args.allow_pickle)
    if not compiles_fla_kernels(provenance):
        print(f"nothing to compile: {family_name(provenance['config'])} runs native torch")
        return 0
    from ccq_eval.run.batching import default_batch_size

    batch = args.batch_size or default_batch_size(device)
    for driver in {call_key(driver): driver for driver in drivers}.values():  # each way of calling the model once
        for length in sorted({min(length, driver.max_length()) for length in lengths}):
            compile_and_say(model, provenance, length, batch, out=lambda line: print(line, flush=True),
                            exercise=driver.exercise, calls=driver.model_calls)
    if args.fla_configs:
        from ccq_eval.run.tuned_configs import write_tuned_configs

        kernels, shapes = write_tuned_configs(Path(args.fla_configs))
        print(f"wrote the configs fla's autotuner chose for {kernels} kernels ({shapes} shapes) to {args.fla_configs}; "
              f"later jobs: FLA_CONFIG_DIR={args.fla_configs} FLA_CACHE_MODE=fuzzy")
    return 0
