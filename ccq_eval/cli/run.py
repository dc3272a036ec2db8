"""`ccq-eval run` (and `ccq-eval --model CKPT --suite NAME`): a suite on a checkpoint, every number stored with
its provenance. The suites' names, their lengths' meaning and defaults and their own flags come from the registry."""

from __future__ import annotations

from ccq_eval.cli.common import MAX_SAMPLES, add_store, lengths_text, number
from ccq_eval.errors import BadInput

NAME = "run"


def _suites_help() -> tuple[str, str, str]:
    """(--suite, --lengths, --samples) help, each suite's part from its registry entry."""
    from ccq_eval.suites import ALL_ORDER, SUITES

    suite = f"suite to run: {', '.join(SUITES)}, or all ({', '.join(ALL_ORDER)} in one run record)"
    lengths = ("context budgets in tokens of the model's tokenizer, comma list (k = 1024); per suite: "
               + "; ".join(f"{s.name}: {s.length_means}{f', 0 = {s.zero_length}' if s.zero_length else ''} "
                           f"(default {lengths_text(s.default_lengths)})" for s in SUITES.values()))
    samples = "items per unit; per suite: " + "; ".join(
        f"{s.name}: {s.samples_mean} (default {s.default_samples or 'all'})" for s in SUITES.values())
    return suite, lengths, samples


def _ccq_backbones() -> str:
    """The families CCQ attaches to, from their rows (pure Python: the CLI loads nothing heavy)."""
    from ccq_eval.families import fla_families

    return " / ".join(f.name for f in fla_families().values() if f.ccq)


def _add_suite_options(run) -> None:
    """Each suite's own flags, as its registry entry declares them (parsed, typed, by the runner); suites may share
    one (the same SuiteOption: S-NIAH's and the multi-needle suite's --haystack)."""
    from ccq_eval.suites import SUITES

    options, owners = {}, {}  # name -> the option, and the suites declaring it
    for suite in SUITES.values():
        for option in suite.options:
            if options.setdefault(option.name, option) != option:
                raise RuntimeError(f"suites {owners[option.name][0]!r} and {suite.name!r} both declare "
                                   f"--{option.name}, differently")
            owners.setdefault(option.name, []).append(suite.name)
    for name, option in options.items():
        run.add_argument(f"--{name}", dest=f"suite_option_{name}", metavar=name.upper(),
                         help=f"{', '.join(owners[name])}: {option.help}")


def add(subparsers) -> None:
    run = subparsers.add_parser(NAME, help="run a suite on a checkpoint and store every number with its provenance")
    suite_help, lengths_help, samples_help = _suites_help()
    run.add_argument("--model", required=True, help="checkpoint folder (config.json, safetensors, tokenizer), zoo:<name>, "
                     "or ORG/NAME[@REVISION] on the Hugging Face Hub")
    run.add_argument("--suite", required=True, help=suite_help)
    run.add_argument("--tasks", help="comma list of the suite's task ids (sniah_1 or just 1); default: all")
    run.add_argument("--lengths", help=lengths_help)
    run.add_argument("--samples", type=number(int, 1, MAX_SAMPLES, "items per unit"), help=samples_help)
    run.add_argument("--label", help="the model's name in tables and plots (default: checkpoint folder or zoo name, "
                                     "plus any CCQ override, e.g. gla-tiny+ccq0.3)")
    add_store(run)
    run.add_argument("--data-dir", help="local data root (haystack/*.txt|*.jsonl for S-NIAH-2/3)")
    run.add_argument("--seed", type=number(int, 0, 2**32 - 1, "numpy's seeds"), default=0,
                     help="seed for data generation and lm-eval (default 0)")
    run.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda[:N]")
    run.add_argument("--dtype", help="float32, bfloat16 or float16 (default: float32 on CPU, bfloat16 on CUDA)")
    run.add_argument("--batch-size",
                     help="batch size (default: 1 on the CPU, 16 on CUDA), or auto: 1 on the CPU, on a GPU the largest "
                          "power of two up to 64 whose prefill at the longest length fits, probed before the first unit")
    run.add_argument("--force", action="store_true", help="rerun units that are already complete in the store")
    run.add_argument("--dry-run", action="store_true", help="list the units that would run and which are done; run nothing")
    run.add_argument("--allow-pickle", action="store_true", help="allow pickle weights (pytorch_model.bin): they can run code")
    run.add_argument("--ccq-lambda", type=number(float, 0.0, 100.0, "a contraction strength"),
                     help=f"training-free CCQ on a {_ccq_backbones()} checkpoint: fixed lambda "
                          "(with Sigma scaled by its trace unless --ccq-sigma-scale none)")
    run.add_argument("--ccq-sigma-scale", choices=("none", "trace"), help="how Sigma is scaled before use")
    run.add_argument("--threads", type=number(int, 1, 1024, "torch CPU threads"),
                     help="torch CPU threads (default: OMP_NUM_THREADS when set, else the cores other work leaves "
                          "free at start; see ccq-eval env)")
    run.add_argument("--shard", metavar="I/N", help="run only the I-th of N deterministic slices of the units "
                                                    "(0-based; merge the stores with ccq-eval ingest); slurm: this "
                                                    "Slurm job array task's slice; auto: that inside an array, else "
                                                    "all")
    run.add_argument("--kernels", choices=("auto", "own", "reference"), default="auto",
                     help="ccq-eval's own decoding kernels: auto (default) checks each against its reference on the "
                          "device on first use and runs the reference where it disagrees; own trusts them unchecked; "
                          "reference never runs them (the run records which path each took)")
    run.add_argument("--rendezvous-timeout", metavar="MINUTES", type=number(float, 0.01, 1440.0, "minutes"),
                     default=5.0, help="data-parallel runs (torchrun, accelerate launch): how long the ranks wait for "
                                       "each other before naming the ones that never came and exiting (default 5)")
    _add_suite_options(run)


def _batch_size(value: str | None) -> int | str | None:
    if value is None or value == "auto":
        return value
    if not (value.isascii() and value.isdigit()) or not 1 <= int(value) <= 4096:  # "8²" is a digit to isdigit()
        raise BadInput(f"--batch-size {value}: must be an integer in [1, 4096] or auto")
    return int(value)


def _suite_options(args) -> dict[str, str]:
    """The suite flags given, as text (the runner parses them with their suite's declaration)."""
    from ccq_eval.suites import SUITES

    return {o.name: getattr(args, f"suite_option_{o.name}") for s in SUITES.values() for o in s.options
            if getattr(args, f"suite_option_{o.name}", None) is not None}


def handle(args) -> int:
    from ccq_eval.run import RunRequest, run_suite

    request = RunRequest(
        model=args.model, suite=args.suite, tasks=args.tasks, lengths=args.lengths, samples=args.samples,
        label=args.label, store=args.store, data_dir=args.data_dir, seed=args.seed, device=args.device,
        dtype=args.dtype, batch_size=_batch_size(args.batch_size), force=args.force, dry_run=args.dry_run,
        allow_pickle=args.allow_pickle, ccq_lambda=args.ccq_lambda, ccq_sigma_scale=args.ccq_sigma_scale,
        options=_suite_options(args), shard=args.shard, threads=args.threads, kernels=args.kernels,
        rendezvous_timeout=args.rendezvous_timeout)
    return run_suite(request)
