"""``ccq-eval lm-eval ARGS``: lm-eval's own command line, with what its HF model needs to load an fla or CCQ
checkpoint registered first (fla's model types and the CCQ families in transformers' Auto classes; the torch
implementations of fla's ops for tensors on the CPU, where no Triton kernel runs), ccq-eval's task plugins on the
include path, and ``pretrained=zoo:NAME`` read as that zoo model's folder. Everything else is lm-eval's: flags,
output, results JSON. fla's own README runs lm-eval the same way, through a script that imports fla first."""

from __future__ import annotations

import re
import sys

from ccq_eval.task_plugins import include_path


def register_families() -> None:
    import fla  # noqa: F401 - registers fla's model types with transformers

    import ccq_eval.models  # noqa: F401 - registers the CCQ families
    from ccq_eval.models.cpu_backend import install_cpu_backend
    from ccq_eval.models.kv_cache import install_growing_kv_cache

    install_cpu_backend()  # dispatches on the tensors' device: CUDA tensors still reach fla's kernels
    install_growing_kv_cache()


def with_zoo_paths(argv: list[str]) -> list[str]:
    """``pretrained=zoo:NAME`` (and ``tokenizer=zoo:NAME``) in --model_args replaced by the zoo model's folder."""
    from ccq_eval.models.loading import resolve_spec

    def folder(match: re.Match) -> str:
        return f"{match.group(1)}={resolve_spec(match.group(2))[0]}"

    out, after_model_args = [], False
    for arg in argv:
        if after_model_args or arg.startswith("--model_args="):
            arg = re.sub(r"\b(pretrained|tokenizer)=(zoo:[A-Za-z0-9_.-]+)", folder, arg)
        after_model_args = arg == "--model_args"
        out.append(arg)
    return out


def lm_eval_argv(argv: list[str]) -> list[str]:
    """The arguments lm-eval's CLI gets: ours added where the user gave none."""
    argv = with_zoo_paths(list(argv))
    subcommands = ("run", "ls", "validate")
    runs = not argv or argv[0] not in subcommands[1:]
    if runs and not any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        argv += ["--include_path", include_path()]
    return argv


def main(argv: list[str]) -> int:
    from lm_eval.__main__ import cli_evaluate

    register_families()
    saved = sys.argv
    sys.argv = ["lm-eval", *lm_eval_argv(argv)]
    try:
        cli_evaluate()
    except SystemExit as exc:  # lm-eval's argparse and its own checks exit; pass their status on
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return 0
