"""lm-eval's HF model, refusing to cut: where HFLM would drop a prompt's first tokens to fit ``max_length`` (with
only a log line), these methods raise ``PromptTooLong`` instead. ccq-eval's own wrapper and the ``hf`` model of
``ccq-eval lm-eval`` are both built on it."""

from __future__ import annotations

from lm_eval.models.huggingface import HFLM

from ccq_eval.generation.text import PromptTooLong


class RefusesTruncation:
    """Mixed in before HFLM: its two places that cut from the left refuse instead."""

    def tok_batch_encode(self, strings, padding_side="left", left_truncate_len=None, truncation=False):
        encoding = self.tokenizer(strings, padding="longest", return_tensors="pt",
                                  padding_side=padding_side, truncation=False)
        lengths = encoding["attention_mask"].sum(dim=1)
        if left_truncate_len is not None and int(lengths.max()) > left_truncate_len:
            worst = int(lengths.max())
            raise PromptTooLong(f"a prompt of {worst} tokens does not fit the budget of {left_truncate_len} "
                                f"(max_length {self.max_length} minus the tokens to generate); it would be truncated "
                                f"(it needs max_length={worst + self.max_length - left_truncate_len})")
        return encoding["input_ids"], encoding["attention_mask"]

    def _loglikelihood_tokens(self, requests, disable_tqdm=False, override_bs=None):
        for _, context_enc, continuation_enc in requests:
            total = len(context_enc) + len(continuation_enc)
            if total > self.max_length + 1:
                raise PromptTooLong(f"a scored sequence of {total} tokens exceeds max_length {self.max_length}; "
                                    f"it would be truncated (it needs max_length={total - 1})")
        return super()._loglikelihood_tokens(requests, disable_tqdm=disable_tqdm, override_bs=override_bs)


class NoTruncationHFLM(RefusesTruncation, HFLM):
    """lm-eval's ``hf`` model as ``ccq-eval lm-eval`` runs it (registered as MODEL_NAME)."""


MODEL_NAME = "hf-no-truncation"
HF_NAMES = ("hf", "hf-auto", "huggingface")  # lm-eval's names for HFLM, which ccq-eval lm-eval runs as MODEL_NAME
