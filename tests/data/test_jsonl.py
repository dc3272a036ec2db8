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
