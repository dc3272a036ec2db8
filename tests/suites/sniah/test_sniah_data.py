"""The S-NIAH generator: RULER's template, needle, keys and placement; the token budget; the cache."""

import hashlib
import json
import re
from pathlib import Path

import pytest

from ccq_eval.data.cache import freeze, tokenizer_fingerprint
from ccq_eval.suites.sniah import data as sniah
from ccq_eval.suites.sniah.haystack import HaystackError, load_haystack
from tests.helpers import byte_tokenizer

TOK = byte_tokenizer()
PROMPT = re.compile(
    r"^A special magic (number|uuid) is hidden within the following text\. Make sure to memorize it\. "
    r"I will quiz you about the \1 afterwards\.\n(?P<context>.*)\n"
    r"What is the special magic \1 for (?P<key>.+?) mentioned in the provided text\?$", re.S)


@pytest.mark.parametrize("task,value_pattern", [
    ("sniah_1", r"\d{7}"), ("sniah_2", r"\d{7}"),
    ("sniah_3", r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"),
])
def test_prompts_follow_ruler(task, value_pattern):
    adjectives, nouns = sniah._adjectives_and_nouns()
    records = sniah.generate(task, TOK, 2048, 12, seed=0, haystack=load_haystack())
    kind = "numbers" if task != "sniah_3" else "uuids"
    for r in records:
        match = PROMPT.match(r["input"])
        assert match, r["input"][:200]
        key, value = r["key"], r["outputs"][0]
        assert match.group("key") == key and re.fullmatch(value_pattern, value)
        adjective, noun = key.split("-", 1)
        assert adjective in adjectives and noun in nouns
        needle = f"One of the special magic {kind} for {key} is: {value}."
        assert match.group("context").count(needle) == 1
        assert r["gen_prefix"] == f"The special magic {kind[:-1]} for {key} mentioned in the provided text is"


def test_prompt_plus_generation_fits_and_fills_the_budget():
    for task, unit_tokens in (("sniah_1", len(sniah.REPEAT_FILLER) + 1), ("sniah_2", 40)):
        for length in (1024, 3000):
            records = sniah.generate(task, TOK, length, 10, seed=1, haystack=load_haystack())
            for r in records:
                tokens = len(TOK(sniah.prompt_of(r))["input_ids"])
                assert tokens + 128 <= length
                assert r["length"] == tokens + 128 and r["max_length"] == length
            # the haystack is the largest that fits: one more filler unit / a few words would not
            assert max(r["length"] for r in records) > length - unit_tokens


def test_needle_placement():
    repeat = sniah.generate("sniah_1", TOK, 4096, 40, seed=2, haystack=None)
    for r in repeat:
        sentences = r["input"].split("\n")[1:-1]
        index = next(i for i, s in enumerate(sentences) if s.startswith("One of the special magic"))
        assert sentences[:index] == [sniah.REPEAT_FILLER] * index
        assert r["depth"] == pytest.approx(100 * index / r["haystack_units"])
    assert len({r["depth"] for r in repeat}) > 5  # placement really varies
    essays = sniah.generate("sniah_2", TOK, 4096, 40, seed=2, haystack=load_haystack())
    for r in essays:
        assert r["depth"] in sniah.DEPTHS
        before = PROMPT.match(r["input"]).group("context").split("One of the special magic")[0]
        assert before == "" or before.rstrip()[-1] in ".!?"  # inserted at a sentence boundary
    assert len({r["depth"] for r in essays}) > 10


def test_generation_is_deterministic_and_seeded():
    a = sniah.generate("sniah_2", TOK, 1024, 5, seed=3, haystack=load_haystack())
    b = sniah.generate("sniah_2", TOK, 1024, 5, seed=3, haystack=load_haystack())
    c = sniah.generate("sniah_2", TOK, 1024, 5, seed=4, haystack=load_haystack())
    assert a == b and a != c


def test_frozen_cache_is_reused_and_verified():
    hay = load_haystack()
    first, digest, reused = sniah.load_or_generate("sniah_3", TOK, 1024, 6, 0, hay)
    again, digest2, reused2 = sniah.load_or_generate("sniah_3", TOK, 1024, 6, 0, hay)
    assert (reused, reused2) == (False, True) and first == again and digest == digest2
    path = sniah.dataset_path(sniah.dataset_key("sniah_3", sniah.tokenizer_fingerprint(TOK), 1024, 6, 0, hay))
    meta = json.loads(path.with_suffix(".meta.json").read_text())
    assert meta["content_sha256"] == digest and meta["key"]["task"] == "sniah_3"
    path.write_text(path.read_text().replace("magic", "tragic", 1))  # tampered: rebuilt, not trusted
    rebuilt, digest3, reused3 = sniah.load_or_generate("sniah_3", TOK, 1024, 6, 0, hay)
    assert reused3 is False and rebuilt == first and digest3 == digest


def test_dataset_key_covers_everything_that_changes_the_data(tmp_path):
    hay = load_haystack()
    other_hay = tmp_path / "other.txt"
    other_hay.write_text(" ".join(["Another essay sentence here."] * 400))
    base = sniah.dataset_key("sniah_2", "tok", 1024, 10, 0, hay)
    changed = [
        sniah.dataset_key("sniah_2", "tok2", 1024, 10, 0, hay),
        sniah.dataset_key("sniah_2", "tok", 2048, 10, 0, hay),
        sniah.dataset_key("sniah_2", "tok", 1024, 11, 0, hay),
        sniah.dataset_key("sniah_2", "tok", 1024, 10, 1, hay),
        sniah.dataset_key("sniah_2", "tok", 1024, 10, 0, load_haystack(str(other_hay))),
    ]
    assert all(sniah.dataset_path(k) != sniah.dataset_path(base) for k in changed)
    # S-NIAH-1 does not read the essays: its key ignores them
    assert sniah.dataset_key("sniah_1", "tok", 1024, 10, 0, hay) == sniah.dataset_key("sniah_1", "tok", 1024, 10, 0, None)


def test_a_length_the_essays_cannot_fill_without_repeating_is_refused():
    """The shipped essays hold 2,510 words: 20K bytes would read them twice in one prompt."""
    with pytest.raises(sniah.SniahError, match="length 20000: the sniah_2 prompts need .* repeat its sentences"):
        sniah.generate("sniah_2", TOK, 20000, 2, seed=0, haystack=load_haystack())
    records = sniah.generate("sniah_2", TOK, 8192, 2, seed=0, haystack=load_haystack())
    assert records[0]["haystack_passes"] == 1 and records[0]["length"] > 8000


def test_length_below_the_prompt_skeleton():
    with pytest.raises(sniah.SniahError, match="use a larger --lengths"):
        sniah.generate("sniah_1", TOK, 300, 2, seed=0, haystack=None)
    assert 300 < sniah.smallest_length("sniah_1", TOK, None, 300, 2, 0)


@pytest.mark.parametrize("content,message", [
    ("too short " * 20, "too short for a haystack"),
    (b"\xff\xfe\x00binary", "not UTF-8 text"),
    ('{"text": 1}\n', "no string field 'text'"),
    ("not json\n", "is not JSON"),
])
def test_bad_haystacks(tmp_path, content, message):
    path = tmp_path / ("bad.jsonl" if isinstance(content, str) and content.endswith("\n") else "bad.txt")
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(HaystackError, match=message):
        load_haystack(str(path))


@pytest.mark.parametrize("task", ["sniah_1", "sniah_3"])
def test_every_length_the_minimum_check_accepts_generates(task):
    """Around the smallest length, each length either generates every sample within budget or is below
    the minimum, where generation refuses with SniahError (it used to crash: randrange on a negative)."""
    hay = load_haystack() if task != "sniah_1" else None
    seen = set()
    for length in range(495, 560, 4):
        smallest = sniah.smallest_length(task, TOK, hay, length, 100, 0)
        if length >= smallest:
            records = sniah.generate(task, TOK, length, 100, seed=0, haystack=hay)
            assert len(records) == 100 and max(r["length"] for r in records) <= length
            seen.add("generated")
        else:
            with pytest.raises(sniah.SniahError, match="use a larger --lengths"):
                sniah.generate(task, TOK, length, 100, seed=0, haystack=hay)
            seen.add("refused")
    assert seen == {"generated", "refused"}  # the range straddles the minimum


def test_a_length_that_crashed_generation_is_refused_up_front(tmp_path, capsys):
    from ccq_eval.cli import main

    store = tmp_path / "s.db"
    assert main(["--model", "zoo:gla-tiny", "--suite", "sniah", "--tasks", "1", "--lengths", "503",
                 "--store", str(store), "--device", "cpu"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccq-eval: error: --lengths: 503 tokens cannot hold every sniah_1 prompt (521 tokens")
    assert "\n" not in err and not store.exists()


def test_a_tokenizer_that_drops_the_haystack_is_refused_not_searched_forever():
    """The haystack search doubles its unit count while the prompt fits: a tokenizer that encodes the filler
    to nothing would let it double forever."""
    from tokenizers import Regex, normalizers

    from ccq_eval.byte_tokenizer import byte_tokenizer

    digits_only = byte_tokenizer()
    digits_only.backend_tokenizer.normalizer = normalizers.Replace(Regex(r"[^0-9]"), "")
    with pytest.raises(sniah.SniahError, match="the tokenizer drops the haystack's text"):
        sniah.generate("sniah_1", digits_only, 1024, 2, seed=0, haystack=None)


class CoarseTokenizer:
    """One token per thousand characters (started ones count): a tokenizer coarser than any real one."""

    def __init__(self, characters: int = 1000):
        self.characters = characters

    def __call__(self, text, add_special_tokens=True):
        return {"input_ids": list(range(-(-len(text) // self.characters)))}


@pytest.mark.parametrize("task", ["sniah_1", "sniah_2"])
def test_a_coarse_tokenizer_still_fills_its_lengths(task):
    """RULER repeats the haystack without bound; the search is bounded by the tokens the text adds, not by a cap
    on units (one that refused S-NIAH-1 at 512 with "512 haystack units encode to at most 384 tokens")."""
    hay = load_haystack(None) if task == "sniah_2" else None
    # essays: 20 characters a token, so the lengths stay within the shipped essays (a repeat is refused)
    coarse = CoarseTokenizer(1000 if task == "sniah_1" else 20)
    for length in ((512, 1024) if task == "sniah_1" else (256, 512)):
        records = sniah.generate(task, coarse, length, 3, seed=0, haystack=hay)
        budget = length - sniah.TOKENS_TO_GENERATE
        tokens = [r["length"] - sniah.TOKENS_TO_GENERATE for r in records]
        assert all(budget - 2 <= t <= budget for t in tokens), (length, tokens)  # filled, not cut short
        assert all(r["outputs"][0] in r["input"] for r in records)


def test_a_tokenizer_that_encodes_nothing_is_refused_in_one_line():
    class Empty(CoarseTokenizer):
        def __call__(self, text, add_special_tokens=True):
            return {"input_ids": []}

    with pytest.raises(sniah.SniahError, match=r"encode to 0 tokens, no more than 0 did; the tokenizer drops"):
        sniah.generate("sniah_1", Empty(), 1024, 2, seed=0, haystack=None)


def _words_reference(path) -> list[str]:
    """The haystack as RULER reads it: every whitespace-separated word, in order."""
    return Path(path).read_text(encoding="utf-8").split()


@pytest.mark.parametrize("n_words", [0, 1, 999, 1000, 1001, 2500, 3001])
def test_haystack_take_equals_the_word_list_reference(tmp_path, n_words):
    path = tmp_path / "hay.txt"
    path.write_text("  Über\tthe river\n\n" + " ".join(f"w{i}é" for i in range(997)) + "\u2003end.\n", encoding="utf-8")
    words = _words_reference(path)
    hay = load_haystack(str(path))
    passes = -(-n_words // len(words))
    assert hay.take(n_words) == (" ".join((words * max(passes, 1))[:n_words]), passes)
    assert hay.fingerprint == hashlib.sha256(" ".join(words).encode()).hexdigest()


def test_a_haystack_of_short_words_takes_a_few_times_its_size(tmp_path):
    """4 MB of two-letter words: a tuple of word strings held ~70 MB (about 20x); the text and word ends stay
    within 4x, and loading peaks within 6x."""
    import tracemalloc

    path = tmp_path / "short.txt"
    path.write_text(" ".join(("ab", "cd", "ef")[i % 3] for i in range(1_400_000)))
    size = path.stat().st_size
    tracemalloc.start()
    hay = load_haystack(str(path))
    kept, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert hay.n_words == 1_400_000 and hay.take(4)[0] == "ab cd ef ab"
    assert kept < 4 * size and peak < 6 * size, (kept, peak, size)


def test_records_cached_before_the_repeat_check_are_refused_on_reading(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path))
    hay = load_haystack()
    records, _, _ = sniah.load_or_generate("sniah_2", TOK, 2048, 2, 0, hay)
    key = sniah.dataset_key("sniah_2", tokenizer_fingerprint(TOK), 2048, 2, 0, hay)
    freeze(sniah.dataset_path(key), [{**r, "haystack_passes": 2} for r in records], key)  # as an older version froze
    with pytest.raises(sniah.SniahError, match="repeat its sentences"):
        sniah.load_or_generate("sniah_2", TOK, 2048, 2, 0, hay)
