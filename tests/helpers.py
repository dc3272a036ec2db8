"""Small models and a byte-level tokenizer, made in the tests (no downloads)."""

from __future__ import annotations

from pathlib import Path

import torch
from tokenizers import Tokenizer, decoders, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

TINY = {
    "gla": dict(hidden_size=64, num_hidden_layers=2, num_heads=2, vocab_size=260),
    "gated_deltanet": dict(hidden_size=64, num_hidden_layers=2, num_heads=2, head_dim=32, vocab_size=260),
    "transformer": dict(hidden_size=64, num_hidden_layers=2, num_heads=2, vocab_size=260),
}


def byte_tokenizer() -> PreTrainedTokenizerFast:
    """256 byte tokens plus <s>, </s>, <pad>, <unk>: every string round-trips."""
    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for special in ("<s>", "</s>", "<pad>", "<unk>"):
        vocab[special] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")


def tiny_model(kind: str, **overrides):
    """A randomly initialised tiny model of an fla or CCQ family ('gla', 'ccq_gla', ...)."""
    import ccq_eval.models  # noqa: F401
    from transformers import AutoConfig, AutoModelForCausalLM

    base = kind.removeprefix("ccq_")
    config = AutoConfig.for_model(kind, **{**TINY[base], **overrides})
    return AutoModelForCausalLM.from_config(config).eval()


def save_checkpoint(model, folder: Path, tokenizer=None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    (tokenizer or byte_tokenizer()).save_pretrained(folder)
    return folder


def greedy_by_full_forward(model, ids: torch.Tensor, steps: int) -> torch.Tensor:
    """Greedy decoding without a cache: the slow reference for generate()."""
    for _ in range(steps):
        with torch.no_grad():
            nxt = model(ids).logits[:, -1].argmax(-1, keepdim=True)
        ids = torch.cat([ids, nxt], dim=1)
    return ids
