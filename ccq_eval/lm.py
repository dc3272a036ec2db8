"""The lm-eval model wrapper: HFLM with an explicit context budget and no silent truncation.

HFLM takes its budget from the config's ``max_position_embeddings`` (2048 in fla configs) unless
told otherwise, and cuts long prompts from the left with only a log line. Here ``max_length`` is
always given (the suite's longest length), and a prompt that would be cut raises
``PromptTooLong`` instead, which fails its unit. Recurrent models decode with their cache through
``generate`` (fla's cache), as HFLM does.
"""

from __future__ import annotations

import logging

import torch
from lm_eval.models.huggingface import HFLM


class PromptTooLong(RuntimeError):
    """A prompt that would have to be truncated to fit the context budget."""


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
