"""The lm-eval model wrapper: HFLM with an explicit context budget and no silent truncation.

HFLM takes its budget from the config's ``max_position_embeddings`` (2048 in fla configs) unless
told otherwise, and cuts long prompts from the left with only a log line. Here ``max_length`` is
always given (the suite's longest length), and a prompt that would be cut raises
``PromptTooLong`` instead, which fails its unit. Generation goes through ccq-eval's own engine
(``ccq_eval/generation/``), not transformers' ``generate()``: packed prefill, batched cached decoding, rows that
leave as they finish.
"""

from __future__ import annotations

import contextlib
import logging
import os

import torch
from lm_eval.models.huggingface import HFLM

from ccq_eval.lm.strict import PromptTooLong, RefusesTruncation  # noqa: F401 - PromptTooLong: re-exported


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) under `accelerate launch` / torchrun (their env), initialising the process
    group (gloo on CPU, nccl on CUDA) if the launcher has not; (0, 1) for a single process."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), dist.get_world_size()


class CCQEvalLM(RefusesTruncation, HFLM):
    """HFLM over a loaded checkpoint, implementing adapter.ModelAdapter (rank and world_size are HFLM's)."""

    scores_text = True

    def __init__(self, model, tokenizer, max_length: int, batch_size: int = 1):
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
        # HFLM only sets up data parallelism when it loads the model itself; lm-eval's evaluator
        # splits requests by rank and gathers through the hooks below.
        self._rank, self._world_size = distributed_rank()

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

    def generate(self, requests):
        """adapter.ModelAdapter.generate: the engine's results for ``requests`` (the model's EOS ids added to each
        one's stop ids), in their order; across data-parallel ranks each runs its share and rank 0 gets every
        result (None on the others)."""
        from ccq_eval.lm.ranks import across_ranks

        return across_ranks(requests, self._engine, self.rank, self.world_size, self.gather_object)

    def _engine(self, requests):
        """The engine over ``requests`` in the order given (across_ranks gives them longest first, so the batch
        refills from the queue as rows finish)."""
        from dataclasses import replace

        from ccq_eval.generation.engine import generate
        from ccq_eval.generation.text import model_stop_ids

        stops = model_stop_ids(self.model, self.tokenizer)
        return generate(self.model, self.tokenizer, [replace(r, stop_ids=r.stop_ids | stops) for r in requests],
                        self.batch_size)

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """lm-eval's generate_until (its own generating tasks; the plugins under stock lm-eval): each group of
        requests that share their generation kwargs goes to the engine at once (lm-eval has split them across
        ranks already); the text comes back as HFLM returns it (decoded, cut at the first stop string)."""
        from ccq_eval.generation.text import completion_text
        from ccq_eval.lm.ranks import across_ranks

        texts: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(repr(sorted(request.args[1].items())), []).append(i)
        for indices in groups.values():
            engine_requests = self._engine_requests([requests[i].args[0] for i in indices], requests[indices[0]].args[1])
            # longest first, in this process alone: lm-eval has split the requests across ranks already
            for i, request, result in zip(indices, engine_requests, across_ranks(engine_requests, self._engine)):
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
        if self._world_size == 1:
            return tensor
        import torch.distributed as dist

        tensor = tensor.reshape(1) if tensor.dim() == 0 else tensor  # as accelerate's gather: scalars -> [1]
        parts = [torch.zeros_like(tensor) for _ in range(self._world_size)]
        dist.all_gather(parts, tensor)
        return torch.cat(parts)

    def gather_object(self, obj, dst=0):
        if self._world_size == 1:
            return [obj]
        import torch.distributed as dist

        out = [None] * self._world_size if self._rank == dst else None
        dist.gather_object(obj, out, dst=dst)
        return out

    def barrier(self) -> None:
        if self._world_size > 1:
            import torch.distributed as dist

            dist.barrier()

    @property
    def device(self) -> torch.device:
        return self._device
