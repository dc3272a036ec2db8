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
from typing import Callable

import torch
from lm_eval.models.huggingface import HFLM
from transformers import StoppingCriteria, StoppingCriteriaList


class PromptTooLong(RuntimeError):
    """A prompt that would have to be truncated to fit the context budget."""


def distributed_rank() -> tuple[int, int]:
    """(rank, world size) under `accelerate launch` / torchrun (their env), initialising the process
    group (gloo on CPU, nccl on CUDA) if the launcher has not; (0, 1) for a single process."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return 0, 1
    import torch.distributed as dist

    if not dist.is_initialized():
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    return dist.get_rank(), dist.get_world_size()


class CCQEvalLM(HFLM):
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

    def generate_until(self, requests, disable_tqdm: bool = False):
        log = os.environ.get("CCQ_EVAL_RANK_LOG")  # which rank answered how many requests (tests, debugging)
        if log:
            with open(log, "a") as handle:
                handle.write(f"{self._rank} {len(requests)}\n")
        return super().generate_until(requests, disable_tqdm=disable_tqdm)

    # --- the answer's NLL from the prefill that starts decoding (S-NIAH) ---------------------------------
    # Scoring the answer with loglikelihood() costs a second forward over every prompt; here the prompt
    # minus its last token is run once with the cache on, a copy of the cache teacher-forces the answer,
    # and generate() continues from the cache. The loglikelihood path stays the reference (and the
    # fallback for any prompt not seen here); tests compare the two.

    def expect_answers(self, answers: dict[tuple[int, ...], list[int]]) -> None:
        """Prompt token ids (as generation encodes them) -> answer token ids to score during generation."""
        self._expected_answers = dict(answers)
        self.answer_nlls: dict[tuple[int, ...], float] = {}

    def prompt_key(self, prompt: str) -> tuple[int, ...]:
        return tuple(self.tok_batch_encode([prompt])[0][0].tolist())

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

    def _newline_stop(self, generation_kwargs: dict) -> dict:
        """LongBench's pred.py for samsum: the newline token ends generation like EOS, and the first
        token may be neither (its min_length = prompt + 1); the newline stays in the output."""
        if not generation_kwargs.pop("stop_at_newline", False):
            return generation_kwargs
        newline = self.tokenizer.encode("\n", add_special_tokens=False)[-1]
        stops = [t for t in (self.tokenizer.eos_token_id, newline) if t is not None]
        return {**generation_kwargs, "eos_token_id": stops, "min_new_tokens": 1}

    # --- rows that stop once their output settles the score (S-NIAH) -----------------------------------

    def stop_when(self, predicates: dict[tuple[int, ...], Callable[[str], bool]]) -> None:
        """Prompt token ids -> a predicate on the decoded continuation: a row stops decoding once it holds
        (S-NIAH: every needle value is in the output, after which string_match_all cannot change). Rows
        without one, and every row under other callers, decode to their budget as before."""
        self._stop_predicates = dict(predicates)
        self.decode_steps = 0  # generated tokens of the rows that had predicates (benchmarks, tests)

    @contextlib.contextmanager
    def _row_stops(self, context, mask):
        """lm-eval builds its stopping criteria inside HFLM._model_generate and passes them to generate();
        ours is appended to that list by wrapping its builder for this call only."""
        import lm_eval.models.huggingface as hf

        predicates = getattr(self, "_stop_predicates", None) or {}
        chosen = [predicates.get(r) for r in _prompt_rows(context, mask)]
        if not any(chosen):
            yield
            return
        original = hf.stop_sequences_criteria
        criterion = _PredicateStop(self.tokenizer, context.shape[1], chosen, self)
        hf.stop_sequences_criteria = lambda *args, **kwargs: StoppingCriteriaList([*original(*args, **kwargs), criterion])
        try:
            yield
        finally:
            hf.stop_sequences_criteria = original

    def _model_generate(self, context, max_length, stop, **generation_kwargs):
        with self._row_stops(context, generation_kwargs.get("attention_mask")):
            return self._generate(context, max_length, stop, **generation_kwargs)

    def _generate(self, context, max_length, stop, **generation_kwargs):
        generation_kwargs = self._newline_stop(generation_kwargs)
        expected = getattr(self, "_expected_answers", None)
        mask = generation_kwargs.get("attention_mask")
        if not expected or mask is None:
            return super()._model_generate(context, max_length, stop, **generation_kwargs)
        rows = _prompt_rows(context, mask)
        if not any(r in expected for r in rows) or int(mask.sum(1).min()) < 2:
            return super()._model_generate(context, max_length, stop, **generation_kwargs)
        with torch.no_grad():
            cache = self.model(input_ids=context[:, :-1], attention_mask=mask[:, :-1], use_cache=True,
                               logits_to_keep=1).past_key_values  # only the cache is used
            self._score_expected(rows, context, mask, copy.deepcopy(cache))
        return super()._model_generate(context, max_length, stop, past_key_values=cache, **generation_kwargs)

    def _score_expected(self, rows, context, mask, cache) -> None:
        answers = [self._expected_answers.get(r) or [] for r in rows]
        width = max(len(a) for a in answers)
        feed = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=context.dtype, device=context.device)
        feed[:, 0] = context[:, -1]
        for i, answer in enumerate(answers):  # right padding: causal, so it changes no scored position
            feed[i, 1 : len(answer)] = torch.tensor(answer[:-1], dtype=context.dtype)
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
        for i, (row, answer) in enumerate(zip(rows, answers)):
            if answer:
                picked = logp[i, torch.arange(len(answer)), torch.tensor(answer)]
                self.answer_nlls[row] = -float(picked.mean())

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

    def tok_batch_encode(self, strings, padding_side="left", left_truncate_len=None, truncation=False):
        encoding = self.tokenizer(strings, padding="longest", return_tensors="pt",
                                  padding_side=padding_side, truncation=False)
        lengths = encoding["attention_mask"].sum(dim=1)
        if left_truncate_len is not None and int(lengths.max()) > left_truncate_len:
            worst = int(lengths.max())
            raise PromptTooLong(f"a prompt of {worst} tokens does not fit the budget of {left_truncate_len} "
                                f"(max_length {self.max_length} minus the tokens to generate); it would be truncated")
        return encoding["input_ids"], encoding["attention_mask"]

    def _loglikelihood_tokens(self, requests, disable_tqdm=False, override_bs=None):
        for _, context_enc, continuation_enc in requests:
            total = len(context_enc) + len(continuation_enc)
            if total > self.max_length + 1:
                raise PromptTooLong(f"a scored sequence of {total} tokens exceeds max_length {self.max_length}; "
                                    "it would be truncated")
        return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)

    @property
    def device(self) -> torch.device:
        return self._device


def _prompt_rows(context: torch.Tensor, mask: torch.Tensor | None) -> list[tuple[int, ...]]:
    """Each row's prompt token ids without its left padding (the keys of expect_answers / stop_when)."""
    if mask is None:
        return [tuple(ids.tolist()) for ids in context]
    return [tuple(ids[m.bool()].tolist()) for ids, m in zip(context, mask)]


class _PredicateStop(StoppingCriteria):
    """Per row: True once the row's predicate holds on its decoded continuation (HF then pads the row)."""

    def __init__(self, tokenizer, prompt_length: int, predicates: list, counter):
        self.tokenizer, self.prompt_length, self.predicates, self.counter = tokenizer, prompt_length, predicates, counter
        self.done = [False] * len(predicates)

    def __call__(self, input_ids, scores, **kwargs):
        for i, predicate in enumerate(self.predicates):
            if predicate is None or self.done[i]:
                continue
            self.counter.decode_steps += 1
            text = self.tokenizer.decode(input_ids[i, self.prompt_length:], skip_special_tokens=True)
            self.done[i] = bool(predicate(text))
        return torch.tensor([d if p is not None else False for d, p in zip(self.done, self.predicates)],
                            dtype=torch.bool, device=input_ids.device)
