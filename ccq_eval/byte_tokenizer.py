"""The byte-level tokenizer the zoo and the tests share: 256 byte tokens plus <s>, </s>, <pad>,
<unk>, so every string round-trips and one token is one byte (lengths in tokens are lengths in bytes)."""

from __future__ import annotations


def byte_tokenizer():
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    for special in ("<s>", "</s>", "<pad>", "<unk>"):
        vocab[special] = len(vocab)
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>")
