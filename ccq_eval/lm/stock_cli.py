"""``ccq-eval lm-eval ARGS``: lm-eval's own command line, with what its HF model needs to load an fla or CCQ
checkpoint registered first (fla's model types and the CCQ families in transformers' Auto classes; the torch
implementations of fla's ops for tensors on the CPU, where no Triton kernel runs), ccq-eval's task plugins on the
include path, and ``pretrained=zoo:NAME`` read as that zoo model's folder. Everything else is lm-eval's: flags,
output, results JSON. fla's own README runs lm-eval the same way, through a script that imports fla first.

Two things are not lm-eval's defaults, so that no prompt is ever cut: the HF model (``--model hf``, lm-eval's
default) runs as ``hf-no-truncation`` (lm/strict.py: HFLM refusing where it would cut from the left), and when the
task plugins ask for lengths past the context lm-eval would take from the checkpoint's config, ``max_length`` is set
to the largest of them (a ``max_length`` the user gave that is too small is refused before anything runs)."""

from __future__ import annotations

import json
import re
import sys

from ccq_eval.errors import BadInput
from ccq_eval.task_plugins import include_path


def register_families() -> None:
    import fla  # noqa: F401 - registers fla's model types with transformers

    from ccq_eval.models import register_ccq_models
    from ccq_eval.ops.cpu_forms import install_cpu_backend
    from ccq_eval.models.generate_cache import install_generate_cache_names
    from ccq_eval.models.kv_cache import install_growing_kv_cache
    from ccq_eval.punkt_model import offer_to_nltk

    register_ccq_models()
    offer_to_nltk()  # some of lm-eval's own tasks would otherwise ask the network for NLTK's punkt_tab on import
    install_generate_cache_names()  # lm-eval decodes through generate(): fla's models keep their history there
    install_cpu_backend()  # dispatches on the tensors' device: CUDA tensors still reach fla's kernels
    install_growing_kv_cache()
    from lm_eval.api.registry import register_model

    from ccq_eval.lm.strict import MODEL_NAME, NoTruncationHFLM

    register_model(MODEL_NAME)(NoTruncationHFLM)  # the same class again is no collision


def _flag(argv: list[str], name: str) -> tuple[int, str] | None:
    """(index of the value, value) of ``--name VALUE`` or ``--name=VALUE``; the last one given wins, as argparse."""
    found = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            found = (i + 1, argv[i + 1])
        elif arg.startswith(name + "="):
            found = (i, arg[len(name) + 1:])
    return found


def _set_flag(argv: list[str], name: str, value: str) -> list[str]:
    found = _flag(argv, name)
    if found is None:
        return [*argv, name, value]
    index = found[0]
    replaced = f"{name}={value}" if argv[index].startswith(name + "=") else value
    return [*argv[:index], replaced, *argv[index + 1:]]


def _args(text: str | None) -> dict:
    """--model_args / --metadata as lm-eval reads them: a JSON object or ``k=v,k=v``."""
    if not text:
        return {}
    if text.strip().startswith("{"):
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            raise BadInput(f"{text[:80]!r}: not a JSON object; pass --metadata '{{\"max_seq_lengths\": [8192]}}'") from None
        return parsed if isinstance(parsed, dict) else {}
    from lm_eval.utils import simple_parse_args_string

    return simple_parse_args_string(text)


def no_needs(tasks: str, metadata: dict) -> dict[str, int]:
    return {}


def with_context_budget(argv: list[str], needs=no_needs) -> list[str]:
    """The HF model as hf-no-truncation, and ``max_length`` in --model_args where the task plugins' lengths need more
    than the checkpoint's config gives; a ``max_length`` given too small for them is refused here. ``needs(tasks,
    metadata)``: task -> the tokens its longest length takes, for the plugins among --tasks (the caller knows them;
    lm-eval's own tasks are not there: the model refuses to cut them at run time)."""
    from ccq_eval.lm.context import PromptWouldBeCut, explicit_budget, model_context
    from ccq_eval.lm.strict import HF_NAMES, MODEL_NAME

    model = _flag(argv, "--model")
    if (model is None and _flag(argv, "--config") is None) or (model is not None and model[1] in HF_NAMES):
        argv = _set_flag(argv, "--model", MODEL_NAME)
    tasks = _flag(argv, "--tasks")
    model_args_text = (_flag(argv, "--model_args") or (None, ""))[1]
    model_args = _args(model_args_text)
    metadata = {**model_args, **_args((_flag(argv, "--metadata") or (None, ""))[1])}
    asked = needs(tasks[1], metadata) if tasks else {}
    if not asked:
        return argv
    task, need = max(asked.items(), key=lambda item: item[1])
    given = explicit_budget(metadata)
    if given is not None:
        if given.tokens < need:
            raise PromptWouldBeCut(f"{given.source} is below the {need} tokens {task} needs at its longest length "
                                   f"(prompt + generation); pass max_length={need} or drop the length")
        return argv
    context = model_context(metadata)
    if context is not None and context.tokens >= need:
        return argv
    if model_args_text.strip().startswith("{"):
        return _set_flag(argv, "--model_args", json.dumps({**model_args, "max_length": need}))
    return _set_flag(argv, "--model_args", ",".join(p for p in (model_args_text, f"max_length={need}") if p))


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


def lm_eval_argv(argv: list[str], needs=no_needs) -> list[str]:
    """The arguments lm-eval's CLI gets: ours added where the user gave none."""
    argv = with_zoo_paths(list(argv))
    subcommands = ("run", "ls", "validate")
    runs = not argv or argv[0] not in subcommands[1:]
    if runs and not any(a == "--include_path" or a.startswith("--include_path=") for a in argv):
        argv += ["--include_path", include_path()]
    return with_context_budget(argv, needs) if runs else argv


def main(argv: list[str], needs=no_needs) -> int:
    from lm_eval.__main__ import cli_evaluate

    from ccq_eval.lm.strict import PromptTooLong

    register_families()
    saved = sys.argv
    sys.argv = ["lm-eval", *lm_eval_argv(argv, needs)]
    try:
        cli_evaluate()
    except PromptTooLong as exc:  # the first (longest) prompt lm-eval would have cut: nothing was written
        print(file=sys.stderr)  # lm-eval's progress bar leaves its line open
        raise BadInput(f"lm-eval: {exc}: pass that in --model_args, or drop the task") from None
    except SystemExit as exc:  # lm-eval's argparse and its own checks exit; pass their status on
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = saved
    return 0
