"""The context a model gets when lm-eval loads it, and the check that a length fits it.

lm-eval's HF model takes its budget from ``max_length`` in ``--model_args`` or else from the checkpoint's config
(``max_position_embeddings``: 2048 in fla's configs) and cuts a longer prompt from the left with only a log line.
The task plugins (run by stock lm-eval) and ``ccq-eval lm-eval`` ask this module what that budget will be before
anything runs, so a length that does not fit is refused (or, under ``ccq-eval lm-eval``, given the budget it needs)
instead of scored on a cut prompt.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

from ccq_eval.errors import BadInput

BUDGET_ARGS = ("max_length", "max_model_len")  # HF's and vLLM's names for the context budget in --model_args


class PromptWouldBeCut(BadInput):
    """A length that does not fit the context lm-eval would give the model: it would cut the prompt."""


@dataclass(frozen=True)
class ModelContext:
    tokens: int
    source: str  # where the number comes from, as the refusal names it


def explicit_budget(args: dict) -> ModelContext | None:
    """``max_length`` (or vLLM's ``max_model_len``) given in the model args or metadata."""
    for name in BUDGET_ARGS:
        value = args.get(name)
        if value in (None, ""):
            continue
        try:
            tokens = int(str(value))
        except ValueError:
            raise BadInput(f"{name}={value!r}: not a token count; pass an integer such as {name}=8192") from None
        if tokens <= 0:
            raise BadInput(f"{name}={value!r}: not a positive token count; pass an integer such as {name}=8192")
        return ModelContext(tokens, f"{name}={tokens}")
    return None


def checkpoint_config(pretrained: str, revision: str | None = None) -> dict | None:
    """The checkpoint's config.json: from its folder, or from the Hugging Face cache (never downloaded here)."""
    folder = Path(pretrained)
    path = folder / "config.json" if folder.is_dir() else None
    if path is None:
        from huggingface_hub import try_to_load_from_cache

        try:
            cached = try_to_load_from_cache(pretrained, "config.json", revision=revision)
        except Exception:  # not a repository name: nothing cached under it
            cached = None
        path = Path(cached) if isinstance(cached, str) else None
    if path is None or not path.is_file():
        return None
    try:
        config = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return config if isinstance(config, dict) else None


def _namespace(config: dict) -> SimpleNamespace:
    nested = config.get("text_config")
    return SimpleNamespace(**{**config, "text_config": _namespace(nested) if isinstance(nested, dict) else None})


def model_context(args: dict, tokenizer=None) -> ModelContext | None:
    """The budget lm-eval's HF model will use: the explicit one, else lm-eval's own rule on the checkpoint's config
    and tokenizer (``resolve_max_length``); None when neither the args nor a readable config tell."""
    if (given := explicit_budget(args)) is not None:
        return given
    pretrained = args.get("pretrained")
    config = checkpoint_config(pretrained, args.get("revision")) if isinstance(pretrained, str) and pretrained else None
    if config is None:
        return None
    from lm_eval.models.utils import resolve_max_length

    tokens = resolve_max_length(_namespace(config), tokenizer)
    fields = [f for f in ("n_positions", "max_position_embeddings", "n_ctx") if config.get(f) is not None]
    source = f"{fields[0]} in {pretrained}'s config.json" if fields else "lm-eval's default"
    return ModelContext(int(tokens), source)


def check_lengths_fit(task: str, needs: dict[int, int], context: ModelContext | None) -> None:
    """``needs``: length -> the tokens it takes (prompt + generation, or the scored tokens). Raises
    PromptWouldBeCut naming the first length that does not fit, and the fix."""
    if not needs:
        return
    if context is None:
        raise PromptWouldBeCut(f"{task}: cannot tell the model's context (no max_length in --model_args and no readable "
                               f"config.json); pass --model_args max_length={max(needs.values())} so no prompt is cut")
    for length, tokens in sorted(needs.items()):
        if tokens > context.tokens:
            raise PromptWouldBeCut(
                f"{task} at length {length} needs {tokens} tokens but the model's context is {context.tokens} "
                f"({context.source}); lm-eval would cut the prompt from the left. Pass --model_args "
                f"max_length={max(needs.values())} (ccq-eval lm-eval sets it) or drop the length")
