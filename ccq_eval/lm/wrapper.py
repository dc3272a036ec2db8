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

from ccq_eval.lm.decoding import DecodingHooks, PromptKey, prompt_rows
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


def stop_tokens(model, tokenizer, eos_strings: list[str]) -> tuple[frozenset[int], int]:
    """(token ids that end a row, the tokens to generate before one may) : the model's and the tokenizer's EOS,
    and for ``eos_strings`` (a generation kwarg of a task's YAML) the last token of each string, which may not be
    the first token generated (it stays in the output)."""
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    ids = {*(configured if isinstance(configured, list) else [configured]), tokenizer.eos_token_id}
    ids |= {tokenizer.encode(s, add_special_tokens=False)[-1] for s in eos_strings}
    return frozenset(i for i in ids if i is not None), 1 if eos_strings else 0


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
        self._hooks: DecodingHooks | None = None  # set by decoding() for one evaluation

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

    @contextlib.contextmanager
    def decoding(self, hooks: DecodingHooks | None):
        """The hooks of one evaluation, for the duration of its call only."""
        saved, self._hooks = self._hooks, hooks
        try:
            yield hooks
        finally:
            self._hooks = saved

    def prompt_key(self, prompt: str) -> PromptKey:
        """A prompt's token ids as generation encodes them: the key of its row in DecodingHooks."""
        return tuple(self.tok_batch_encode([prompt])[0][0].tolist())

    def generate_until(self, requests, disable_tqdm: bool = False) -> list[str]:
        """lm-eval's generate_until through ccq-eval's engine (generation/): each group of requests that share their
        generation kwargs goes to the engine at once, longest prompt first, so the batch refills from it as rows
        finish; the text comes back as HFLM returns it (decoded, cut at the first stop string)."""
        from lm_eval.models.utils import postprocess_generated_text

        from ccq_eval.generation.engine import generate

        hooks = self._hooks or DecodingHooks()
        texts: list[str | None] = [None] * len(requests)
        groups: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            groups.setdefault(repr(sorted(request.args[1].items())), []).append(i)
        for indices in groups.values():
            contexts = [requests[i].args[0] for i in indices]
            engine_requests, until = self._engine_requests(contexts, requests[indices[0]].args[1], hooks)
            order = sorted(range(len(indices)), key=lambda j: -len(engine_requests[j].prompt))  # lm-eval's order
            results = generate(self.model, self.tokenizer, [engine_requests[j] for j in order], self.batch_size)
            for j, result in zip(order, results):
                key = engine_requests[j].prompt
                if result.continuation_nll is not None:
                    hooks.continuation_nlls[key] = result.continuation_nll
                hooks.decode_steps += result.predicate_steps
                text = postprocess_generated_text(self.tok_decode(result.tokens), until, None)
                texts[indices[j]] = text
                self.cache_hook.add_partial("generate_until", requests[indices[j]].args, text)
        return texts

    def _engine_requests(self, contexts: list[str], gen_kwargs: dict, hooks: DecodingHooks):
        """(one engine request per context, the stop strings) under lm-eval's reading of the generation kwargs;
        a prompt that would be cut is refused (tok_batch_encode)."""
        from lm_eval.models.utils import handle_stop_sequences, normalize_gen_kwargs

        from ccq_eval.generation.request import Request

        kwargs = normalize_gen_kwargs(gen_kwargs, self.max_gen_toks)
        if kwargs.pop("do_sample", False) or kwargs.pop("temperature", 0.0):
            raise ValueError("generation_kwargs: ccq-eval decodes greedily; set do_sample: false and temperature: 0.0")
        eos = None if self.eot_token_id is None else self.tok_decode(self.eot_token_id, skip_special_tokens=False)
        until = handle_stop_sequences(kwargs.pop("until", None), eos=eos)  # a tokenizer may define no EOS
        max_gen_toks = kwargs.pop("max_gen_toks")
        stop_ids, min_new_tokens = stop_tokens(self.model, self.tokenizer, kwargs.pop("eos_strings", None) or [])
        ids, mask = self.tok_batch_encode(contexts, left_truncate_len=self.max_length - max_gen_toks)
        requests = [Request(row, max_gen_toks, stop_ids, min_new_tokens, tuple(until), hooks.stop_when.get(row),
                            tuple(hooks.score_continuations.get(row) or ())) for row in prompt_rows(ids, mask)]
        return requests, until

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
