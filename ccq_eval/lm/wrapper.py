"""The lm-eval model wrapper: HFLM with an explicit context budget and no silent truncation.

HFLM takes its budget from the config's ``max_position_embeddings`` (2048 in fla configs) unless
told otherwise, and cuts long prompts from the left with only a log line. Here ``max_length`` is
always given (the suite's longest length), and a prompt that would be cut raises
``PromptTooLong`` instead, which fails its unit. Recurrent models decode with their cache through
``generate`` (fla's cache), as HFLM does.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import os

import torch
from lm_eval.models.huggingface import HFLM
from transformers import StoppingCriteriaList

from ccq_eval.lm.decoding import DecodingHooks, PredicateStop, PromptKey, prompt_rows
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

    def _eos_strings(self, generation_kwargs: dict) -> dict:
        """``eos_strings`` (a generation kwarg of a task's YAML): the last token of each string ends generation
        as EOS does, and the first generated token may not be one (min_new_tokens 1); it stays in the output."""
        strings = generation_kwargs.pop("eos_strings", None) or []
        if not strings:
            return generation_kwargs
        stops = [self.tokenizer.eos_token_id, *(self.tokenizer.encode(s, add_special_tokens=False)[-1] for s in strings)]
        return {**generation_kwargs, "eos_token_id": [t for t in stops if t is not None], "min_new_tokens": 1}

    def _model_generate(self, context, max_length, stop, **generation_kwargs):
        generation_kwargs = self._eos_strings(generation_kwargs)
        hooks = self._hooks or DecodingHooks()
        mask = generation_kwargs.get("attention_mask")
        rows = prompt_rows(context, mask)
        predicates = [hooks.stop_when.get(r) for r in rows]
        extra = [PredicateStop(self.tokenizer, context.shape[1], predicates, hooks)] if any(predicates) else []
        if mask is not None and any(r in hooks.score_continuations for r in rows) and int(mask.sum(1).min()) >= 2:
            # the prompt minus its last token runs once with the cache on; a copy of the cache teacher-forces
            # the continuation, and generate() goes on from the cache (loglikelihood stays the reference)
            with torch.no_grad():
                cache = self.model(input_ids=context[:, :-1], attention_mask=mask[:, :-1], use_cache=True,
                                   logits_to_keep=1).past_key_values  # only the cache is used
                self._score_continuations(hooks, rows, context, mask, copy.deepcopy(cache))
            generation_kwargs["past_key_values"] = cache
        return self._generate(context, max_length, stop, extra, **generation_kwargs)

    def _generate(self, context, max_length, stop, extra_criteria, **generation_kwargs):
        """HFLM._model_generate with more stopping criteria: lm-eval builds its list inside that method and
        offers no way to add to it, so its few lines are followed here rather than its function replaced."""
        from lm_eval.models.huggingface import stop_sequences_criteria

        generation_kwargs["temperature"] = generation_kwargs.get("temperature", 0.0)
        do_sample = generation_kwargs.get("do_sample")
        if generation_kwargs["temperature"] == 0.0 and do_sample is None:
            generation_kwargs["do_sample"] = do_sample = False
        if do_sample is False and generation_kwargs["temperature"] == 0.0:
            generation_kwargs.pop("temperature")
        criteria = StoppingCriteriaList([*stop_sequences_criteria(self.tokenizer, stop, context.shape[1],
                                                                  context.shape[0]), *extra_criteria])
        with torch.autocast(device_type=self.device.type, dtype=self.mixed_precision_dtype,
                            enabled=self.mixed_precision_dtype is not None):
            return self.model.generate(input_ids=context, max_length=max_length, stopping_criteria=criteria,
                                       pad_token_id=self.tokenizer.pad_token_id, use_cache=True, **generation_kwargs)

    def _score_continuations(self, hooks: DecodingHooks, rows, context, mask, cache) -> None:
        continuations = [hooks.score_continuations.get(r) or [] for r in rows]
        width = max(len(c) for c in continuations)
        feed = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=context.dtype, device=context.device)
        feed[:, 0] = context[:, -1]
        for i, continuation in enumerate(continuations):  # right padding: causal, so it changes no scored position
            feed[i, 1 : len(continuation)] = torch.tensor(continuation[:-1], dtype=context.dtype)
        # one token a step, as generate() decodes (fla's attention takes several new tokens with a
        # padded cache only when it is empty)
        step_mask, logits = mask[:, :-1], []
        for j in range(width):
            step_mask = torch.cat([step_mask, torch.ones_like(feed[:, :1])], dim=1)
            out = self.model(input_ids=feed[:, j : j + 1], attention_mask=step_mask, past_key_values=cache,
                             use_cache=True)
            cache = out.past_key_values
            logits.append(out.logits[:, -1])
        logp = torch.log_softmax(torch.stack(logits, dim=1).double(), dim=-1)
        for i, (row, continuation) in enumerate(zip(rows, continuations)):
            if continuation:
                picked = logp[i, torch.arange(len(continuation)), torch.tensor(continuation)]
                hooks.continuation_nlls[row] = -float(picked.mean())

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
