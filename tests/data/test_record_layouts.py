"""LongBench records and long-context corpora in the layouts users have: JSON Lines, a JSON array (Hugging Face's
``Dataset.to_json(lines=False)``) and either gzipped, found under --data-dir by name, each read to the same records
with text that holds U+2028, U+0085, control characters, RTL text and a 5 MB line."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from ccq_eval.suites.longbench import data as longbench
from ccq_eval.suites.longppl import corpora

HOSTILE = "a\u2028b c\u2029d e\u0085f g\x0bh\x1ci \u05e9\u05dc\u05d5\u05dd \u0645\u0631\u062d\u0628\u0627"
SUFFIXES = (".jsonl", ".json", ".jsonl.gz", ".json.gz")


def written(folder: Path, stem: str, records: list[dict], suffix: str) -> Path:
    folder.mkdir(parents=True)
    text = ("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records) if suffix.startswith(".jsonl")
            else json.dumps(records, ensure_ascii=False))
    path = folder / f"{stem}{suffix}"
    path.write_bytes(gzip.compress(text.encode()) if suffix.endswith(".gz") else text.encode())
    return path


def longbench_records() -> list[dict]:
    return [{"input": f"What is item {i}?{HOSTILE}", "context": f"Context {i}. " + ("y" * 5_000_000 if i == 1 else HOSTILE),
             "answers": [f"answer {i}"], "length": 10, "dataset": "qasper", "language": "en", "all_classes": None,
             "_id": f"q-{i}"} for i in range(3)]


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_longbench_records_in_every_layout(suffix, tmp_path):
    records = longbench_records()
    written(tmp_path / "longbench", "qasper", records, suffix)
    path = longbench.local_path("qasper", str(tmp_path))
    assert path is not None and path.name == f"qasper{suffix}"
    read = longbench.read_records(path)
    assert [r["input"] for r in read] == [r["input"] for r in records]
    assert read[0]["context"].endswith(HOSTILE) and len(read[1]["context"]) > 5_000_000


@pytest.mark.parametrize("suffix", SUFFIXES)
def test_a_corpus_in_every_layout(suffix, tmp_path):
    texts = [f"Document one.{HOSTILE}", "z" * 5_000_000, "Document three."]
    written(tmp_path / "longppl", "qasper", [{"text": t} for t in texts], suffix)
    path = corpora.local_path("qasper", str(tmp_path))
    assert path is not None and path.name == f"qasper{suffix}"
    assert corpora.read_documents(path) == (texts, 0)
