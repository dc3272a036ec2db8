"""The lm-eval model wrapper: HFLM with an explicit context budget and no silent truncation, for what lm-eval drives
(log-likelihoods and rolling perplexity, its own generating tasks, the plugins under stock lm-eval).

HFLM takes its budget from the config's ``max_position_embeddings`` (2048 in fla configs) unless
told otherwise, and cuts long prompts from the left with only a log line. Here ``max_length`` is
always given (the suite's longest length), and a prompt that would be cut raises
``PromptTooLong`` instead, which fails its unit. ``generate_until`` builds the engine's requests as the generating
suites do (generation/text.py) and hands them to the generator it is given, not to transformers' ``generate()``.
"""

from __future__ import annotations

import contextlib
import logging
from typing import Callable

import torch
from lm_eval.models.huggingface import HFLM

from ccq_eval.lm.strict import PromptTooLong, RefusesTruncation  # noqa: F401 - PromptTooLong: re-exported


class CCQEvalLM(RefusesTruncation, HFLM):
    """HFLM over a loaded checkpoint, with a context budget (lm/adapter.py). ``generate_here``: requests -> results
    in this process (lm-eval splits its requests across ranks itself); ``ranks``: this process's rank, world size
    and collectives (generation/ranks.py), through which lm-eval's evaluator gathers."""

    def __init__(self, model, tokenizer, max_length: int, generate_here: Callable, ranks, batch_size: int = 1):
        hf_logger = logging.getLogger("lm_eval.models.huggingface")
        level = hf_logger.level
        hf_logger.setLevel(logging.ERROR)  # the "pretrained is not a str" notice is expected here
        try:
            super().__init__(pretrained=model, tokenizer=tokenizer, backend="causal", max_length=max_length,
                             batch_size=batch_size, device=str(model.device))
        finally:
            hf_logger.setLevel(level)
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token  # left padding in batches needs some pad id
        # HFLM sets up data parallelism only when it loads the model itself: here the run's ranks answer
        self._generate_here, self._ranks = generate_here, ranks
        self._rank, self._world_size = ranks.rank, ranks.world_size

    @contextlib.contextmanager
    def budget(self, max_length: int):
        """The context budget for one suite's evaluations: each suite's own (the lm suite's 2048 under
        --suite all, where the wrapper is built with the run's longest length)."""
        saved = self._max_length
        self._max_length = max_length
        try:
            yield self
        finally:
            self._max_length = saved

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """lm-eval's generate_until (its own generating tasks; the plugins under stock lm-eval): each group of
        requests that share their generation kwargs goes to the engine at once (lm-eval has split them across
        ranks already); the text comes back as HFLM returns it (decoded, cut at the first stop string)."""
        from ccq_eval.generation.text import completion_text

        texts: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(repr(sorted(request.args[1].items())), []).append(i)
        for indices in groups.values():
            engine_requests = self._engine_requests([requests[i].args[0] for i in indices], requests[indices[0]].args[1])
            for i, request, result in zip(indices, engine_requests, self._generate_here(engine_requests)):
                texts[i] = completion_text(self.tokenizer, result.tokens, request.until)
                self.cache_hook.add_partial("generate_until", requests[i].args, texts[i])
        return texts

    def _engine_requests(self, contexts: list[str], gen_kwargs: dict):
        """One engine request per context under lm-eval's reading of the generation kwargs (the suites' Ask, read
        from a task's YAML); a prompt that would be cut is refused."""
        from lm_eval.models.utils import normalize_gen_kwargs

        from ccq_eval.generation.text import Ask, engine_request

        kwargs = normalize_gen_kwargs(gen_kwargs, self.max_gen_toks)
        if kwargs.pop("do_sample", False) or kwargs.pop("temperature", 0.0):
            raise ValueError("generation_kwargs: ccq-eval decodes greedily; set do_sample: false and temperature: 0.0")
        until = kwargs.pop("until", None)
        asks = [Ask(i, context, kwargs["max_gen_toks"], tuple([until] if isinstance(until, str) else until or ()),
                    tuple(kwargs.get("eos_strings") or ())) for i, context in enumerate(contexts)]
        return [engine_request(ask, self.tokenizer, self.max_length) for ask in asks]

    def all_gather(self, tensor):
        return self._ranks.all_gather(tensor)

    def gather_object(self, obj, dst=0):
        return self._ranks.gather(obj, dst)

    def barrier(self) -> None:
        self._ranks.barrier()

    @property
    def device(self) -> torch.device:
        return self._device
