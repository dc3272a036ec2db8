"""The JSONL reader users' files go through: what it accepts and the one line it gives for what it cannot read."""

import pytest

from ccq_eval.data.jsonl import read_jsonl


def test_a_byte_order_mark_is_not_part_of_the_first_line(tmp_path):
    path = tmp_path / "corpus.jsonl"
    path.write_bytes(b'\xef\xbb\xbf{"text": "a"}\n{"text": "b"}\n')
    assert read_jsonl(path, ValueError, "corpus") == ([(1, {"text": "a"}), (2, {"text": "b"})], 0)


@pytest.mark.parametrize("line, message", [
    ('{"text": "a\\ud800"}', "line 1 holds a lone UTF-16 surrogate"),
    ("[" * 50_000 + "]" * 50_000, "line 1 cannot be read (nested too deeply)"),
    ('{"n": ' + "7" * 5000 + "}", "line 1 cannot be read (a number too long to convert)"),
    ("{not json", "line 1 is not JSON"),
])
def test_a_line_that_cannot_be_read_is_named(tmp_path, line, message):
    path = tmp_path / "corpus.jsonl"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        read_jsonl(path, ValueError, "corpus")


HOSTILE_TEXT = ["a\u2028b", "c\u2029d", "e\u0085f", "g\x0bh\x0ci", "j\x1c\x1d\x1ek", "\u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627",
                "x" * 5_000_000]


def test_every_unicode_character_inside_a_string_is_text_not_a_line_break(tmp_path):
    """json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 raw; str.splitlines would break there."""
    import json

    path = tmp_path / "records.jsonl"
    path.write_text("".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in HOSTILE_TEXT), encoding="utf-8")
    records, blank = read_jsonl(path, ValueError, "records")
    assert [r["text"] for _, r in records] == HOSTILE_TEXT and [n for n, _ in records] == [1, 2, 3, 4, 5, 6, 7]
    assert blank == 0


def test_windows_line_ends_raw_control_characters_and_blank_lines(tmp_path):
    path = tmp_path / "records.jsonl"
    path.write_bytes(b'{"text": "a\tb"}\r\n\r\n{"text": "c"}\r\n')
    assert read_jsonl(path, ValueError, "records") == ([(1, {"text": "a\tb"}), (3, {"text": "c"})], 1)


def test_a_json_array_gzip_and_an_official_document_are_read(tmp_path):
    import gzip
    import json

    array = tmp_path / "records.json"
    array.write_text('[\n  {"text": "a\u2028b"},\n  {"text": "c"}\n]\n', encoding="utf-8")
    assert read_jsonl(array, ValueError, "records") == ([(2, {"text": "a\u2028b"}), (3, {"text": "c"})], 0)
    packed = tmp_path / "records.jsonl.gz"
    packed.write_bytes(gzip.compress(b'{"text": "a"}\n{"text": "b"}\n'))
    assert read_jsonl(packed, ValueError, "records") == ([(1, {"text": "a"}), (2, {"text": "b"})], 0)
    official = tmp_path / "dev-v2.0.json"
    official.write_text(json.dumps({"version": "v2.0", "data": []}))
    assert read_jsonl(official, ValueError, "records") == ([(1, {"version": "v2.0", "data": []})], 0)


@pytest.mark.parametrize("name, content, message", [
    ("r.json", b'[{"a": 1},\n {"a": 2}\n {"a": 3}]', "line 3 is not JSON"),
    ("r.json", b'[{"a": 1},]', "line 1 is not JSON"),
    ("r.json", b'{"a": 1} {"b": 2}', "line 1 is not JSON"),
    ("r.jsonl.gz", b'{"a": 1}\n', "its name ends in .gz but it is not a whole gzip file"),
])
def test_a_json_or_gzip_file_that_cannot_be_read_is_named(tmp_path, name, content, message):
    path = tmp_path / name
    path.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        read_jsonl(path, ValueError, "records")
