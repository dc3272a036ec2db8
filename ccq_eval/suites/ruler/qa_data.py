"""Where RULER's QA documents come from: DATA_DIR/ruler/<source>.jsonl or .json (one row per question, qa.py's row
format, or the layouts qa_layouts.py reads: SQuAD's and HotpotQA's official files, Hugging Face's exports), else the copy `ccq-eval data fetch ruler` froze in the cache from the hub's parquet (rajpurkar/squad_v2's validation
split, hotpotqa/hotpot_qa's distractor validation split). Every row is checked before any is used."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ccq_eval.data import hub, local
from ccq_eval.data.cache import cache_root, content_hash, freeze
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.suites.ruler import qa
from ccq_eval.suites.ruler.qa_layouts import LAYOUTS, unfold
from ccq_eval.suites.sniah.sizing import SniahError

FETCH_COMMAND = "ccq-eval data fetch ruler"
# task -> its source's name; the hub's parquet: SQuAD v2's commit not confirmed from here (resolved from main when
# fetched and recorded with the frozen copy); HotpotQA's distractor dev set pinned at the commit, size (27,452,575
# bytes, 7,405 questions) and sha256 that public fetch records agree on
SOURCES = {"ruler_qa_squad": "squad", "ruler_qa_hotpot": "hotpotqa"}
HUB = {"squad": hub.HubFile("rajpurkar/squad_v2", "squad_v2/validation-*.parquet", None),
       "hotpotqa": hub.HubFile("hotpotqa/hotpot_qa", "distractor/validation-00000-of-00001.parquet",
                               "1908d6afbbead072334abe2965f91bd2709910ab",
                               "c20b638ca82b21d04fe12e14ff417ad05153d4d215a65de54497fca4e972f7c6")}
LICENCE = {"squad": "CC BY-SA 4.0 (SQuAD 2.0)", "hotpotqa": "CC BY-SA 4.0 (HotpotQA)"}
FIELDS = {"squad": {"title": str, "context": str, "question": str, "answers": list},
          "hotpotqa": {"question": str, "answer": str, "context": list}}


class QaDataError(SniahError):
    """A QA source that is missing or malformed; the message names it and the fix."""


def check_rows(source: str, numbered, where: str) -> list[dict]:
    rows = []
    for number, row in numbered:
        for field, kind in FIELDS[source].items():
            if not isinstance(row, dict) or not isinstance(row.get(field), kind):
                raise QaDataError(f"{where}: line {number}: {field!r} must be a {kind.__name__}; expected "
                                  f"{source} rows ({', '.join(FIELDS[source])})")
        if source == "hotpotqa" and not all(isinstance(e, (list, tuple)) and len(e) == 2 and isinstance(e[0], str)
                                            and isinstance(e[1], list) for e in row["context"]):
            raise QaDataError(f"{where}: line {number}: 'context' must be a list of [title, [sentences]]")
        rows.append(row)
    if not rows:
        raise QaDataError(f"{where}: no rows")
    if source == "squad" and not any(row["answers"] for row in rows):
        raise QaDataError(f"{where}: no question has an answer (RULER skips unanswerable ones); use a file with "
                          "answerable questions (SQuAD 2.0's dev set has about 6,000)")
    return rows


@dataclass(frozen=True)
class QaSource:
    name: str
    path: Path
    fingerprint: str  # sha256 of the rows (part of every data key built from them)
    rows: tuple

    @cached_property
    def qa_set(self) -> qa.QaSet:
        return (qa.squad_set if self.name == "squad" else qa.hotpot_set)(list(self.rows))


def load_source(task: str, data_dir: str | None) -> QaSource:
    name = SOURCES[task]
    path = local.find("ruler", name, data_dir)
    if path is None:
        raise QaDataError(local.not_found("RULER QA documents", [name], "ruler", data_dir,
                                          f"{name}.jsonl or {name}.json ({LAYOUTS[name]})",
                                          FETCH_COMMAND))
    where = f"RULER QA file {str(path)!r}"
    rows = check_rows(name, unfold(name, read_jsonl(path, QaDataError, "RULER QA file")[0], where), where)
    return QaSource(name, path, content_hash(rows), tuple(rows))


def sources(tasks, data_dir: str | None) -> dict[str, QaSource]:
    """The QA tasks among ``tasks`` -> their loaded source (none when no QA task is chosen)."""
    return {task: load_source(task, data_dir) for task in tasks if task in SOURCES}


def hub_rows(name: str, path: Path) -> list[dict]:
    """The hub's parquet as qa.py's rows (answers' texts; HotpotQA's context as [title, sentences] pairs)."""
    import pandas as pd

    frame = pd.read_parquet(path)
    if name == "squad":
        return [{"title": r.title, "context": r.context, "question": r.question,
                 "answers": [str(a) for a in r.answers["text"]]} for r in frame.itertuples()]
    return [{"question": r.question, "answer": r.answer,
             "context": [[str(t), [str(s) for s in sentences]]
                         for t, sentences in zip(r.context["title"], r.context["sentences"])]}
            for r in frame.itertuples()]


def fetch(names: list[str] | None = None, progress=print) -> list[Path]:
    """Each source's parquet (sha256 checked against the hub's record), converted, checked and frozen as
    <cache>/ruler/<name>.jsonl."""
    written = []
    for name in names or list(HUB):
        progress(f"fetching RULER QA {name}: {HUB[name].where} [{LICENCE[name]}]")
        fetched = hub.fetch_file(HUB[name], progress)
        rows = check_rows(name, enumerate(hub_rows(name, fetched.path), 1), f"{fetched.repo}:{fetched.filename}")
        path = cache_root() / "ruler" / f"{name}.jsonl"
        freeze(path, rows, {"source": fetched.record(), "licence": LICENCE[name]})
        progress(f"  {name}: {len(rows)} questions -> {path}")
        written.append(path)
    return written
