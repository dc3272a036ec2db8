"""The SentencePiece tokenizer the retrieval tests read (tests/fixtures/tokenizers/llama-spm) is what it stands in
for: a Llama hub checkpoint's tokenizer files, read offline by AutoTokenizer without sentencepiece installed, a BOS
before every encoding, '▁' word pieces, unseen characters as byte pieces, and decoding that gives the text back."""

from __future__ import annotations

from pathlib import Path

FOLDER = Path(__file__).parents[1] / "fixtures" / "tokenizers" / "llama-spm"


def test_the_folder_is_a_llama_hub_layout():
    assert {p.name for p in FOLDER.iterdir()} == {"tokenizer.model", "tokenizer.json", "tokenizer_config.json",
                                                  "special_tokens_map.json"}
    import json

    config = json.loads((FOLDER / "tokenizer_config.json").read_text())
    assert config["tokenizer_class"] == "LlamaTokenizer" and config["add_bos_token"] and not config["add_eos_token"]


def test_it_encodes_as_sentencepiece_does():
    from tests.fixtures.recall.make_fixtures import llama_spm_tokenizer

    tokenizer = llama_spm_tokenizer()
    text = "The garden grows slowly: 48213 ½"
    ids = tokenizer(text)["input_ids"]
    pieces = tokenizer.convert_ids_to_tokens(ids)
    assert ids[0] == tokenizer.bos_token_id == 1 and pieces[1] == "▁The"
    assert "<0xC2>" in pieces and "<0xBD>" in pieces  # ½ is not in the vocabulary: its UTF-8 bytes are
    assert tokenizer.decode(ids, skip_special_tokens=True) == text
