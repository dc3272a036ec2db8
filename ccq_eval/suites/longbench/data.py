"""LongBench's records (its own format), the official prompts filled in (tasks.py), and the official
middle truncation (pred.py: keep the first and last halves of the prompt's tokens) so that prompt +
the task's generation budget fit the length; each unit's prompts are frozen in the cache."""

from __future__ import annotations

import json
from pathlib import Path

from ccq_eval.data import hub, local
from ccq_eval.data.cache import cache_root, content_hash, freeze, stable_hash
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.errors import BadInput
from ccq_eval.suites.longbench.tasks import TASKS

FETCH_COMMAND = "ccq-eval data fetch longbench"
# THUDM/LongBench moved to zai-org/LongBench (same history). It is a loading-script repository (datasets >= 4
# refuses it); what it publishes is data.zip with data/<key>.jsonl. Commit and archive sha256 as pinned by a
# public fetch script that checked both (see the README's data section).
SOURCE = hub.HubFile("zai-org/LongBench", "data.zip", "5e628be450b7e67fb7ae6e201bd6d8f7056f7672",
                     "cb45b11a4133c6bc1d6a44b0f8e701335ff1e543195db1103472e575857f7f64")
LICENCE = "MIT (LongBench); the source datasets' own licences apply to their records"


REQUIRED_FIELDS = ("input", "context", "answers")


class LongBenchError(BadInput):
    """A LongBench file that is missing or malformed; the message names it and the fix."""


def render_prompt(key: str, record: dict) -> str:
    """The official prompt filled as pred.py fills it: str.format with the record's fields."""
    return TASKS[key].prompt.format(**record)


def local_path(key: str, data_dir: str | None) -> Path | None:
    return local.find("longbench", key, data_dir)


def check_available(keys: list[str], data_dir: str | None) -> None:
    local.require(keys, local_path, LongBenchError, "LongBench data", "longbench", data_dir,
                  "<key>.jsonl (LongBench's record format)", FETCH_COMMAND)


def read_records(path: Path) -> list[dict]:
    """Every record checked before any is used (check_records)."""
    return check_records(read_jsonl(path, LongBenchError, "LongBench file")[0], f"LongBench file {str(path)!r}")


def check_records(numbered, where_file: str) -> list[dict]:
    """Input and context strings, a non-empty list of string answers (a record without a gold answer
    would score 0 for every model), all_classes a list of strings or null."""
    records = []
    for number, record in numbered:
        where = f"{where_file}: line {number}"
        missing = [f for f in REQUIRED_FIELDS if not isinstance(record, dict) or f not in record]
        if missing:
            raise LongBenchError(f"{where} lacks {', '.join(missing)}; "
                                 "expected LongBench's record format (input, context, answers, all_classes)")
        for field in ("input", "context"):
            if not isinstance(record[field], str):
                raise LongBenchError(f"{where}: {field!r} must be a string, not {type(record[field]).__name__}")
        answers = record["answers"]
        if not isinstance(answers, list) or not all(isinstance(a, str) for a in answers):
            raise LongBenchError(f"{where}: 'answers' must be a list of strings")
        if not any(a.strip() for a in answers):
            raise LongBenchError(f"{where}: 'answers' holds no non-empty answer; every record needs at least one gold "
                                 "answer (against nothing every model scores 0)")
        classes = record.get("all_classes")
        if classes is not None and (not isinstance(classes, list) or not all(isinstance(c, str) for c in classes)):
            raise LongBenchError(f"{where}: 'all_classes' must be a list of strings or null")
        records.append(record)
    if not records:
        raise LongBenchError(f"{where_file}: no records")
    return records


def middle_truncate(tokenizer, prompt: str, budget: int) -> tuple[str, int, int]:
    """LongBench's pred.py rule: over budget, keep the first and last budget/2 tokens.
    Returns (prompt, tokens the model will read, tokens cut). Special tokens the encoder adds
    count against the budget; re-encoding the joined halves can drift by a token, so it is checked."""
    def count(text):
        return len(tokenizer(text)["input_ids"])

    ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    total = count(prompt)
    if total <= budget:
        return prompt, total, 0
    keep = budget - (total - len(ids))
    while keep > 0:
        half = keep // 2
        truncated = (tokenizer.decode(ids[:half], skip_special_tokens=True)
                     + tokenizer.decode(ids[-half:] if half else [], skip_special_tokens=True))
        read = count(truncated)
        if read <= budget:
            return truncated, read, len(ids) - 2 * half
        keep -= read - budget
    raise LongBenchError(f"a budget of {budget} tokens cannot hold any of the prompt")


def build(key: str, records: list[dict], tokenizer, length: int, samples: int | None) -> tuple[list[dict], str]:
    """Prompts for one task under one length budget: (docs for lm-eval, content fingerprint)."""
    task = TASKS[key]
    budget = length - task.max_gen
    if budget <= 0:
        raise LongBenchError(f"--lengths {length}: smaller than {key}'s generation budget of {task.max_gen} tokens")
    docs = []
    for index, record in enumerate(records[:samples]):
        prompt, read, cut = middle_truncate(tokenizer, render_prompt(key, record), budget)
        docs.append({"index": index, "task": key, "prompt": prompt, "answers": record["answers"],
                     "all_classes": record.get("all_classes") or [], "prompt_tokens": read, "truncated_tokens": cut,
                     "id": str(record.get("_id", index))})
    return docs, content_hash(docs)


def member_records(path: Path, key: str, where: str) -> list[dict]:
    """data/<key>.jsonl of data.zip, parsed and checked as a local file would be."""
    member, numbered = f"data/{key}.jsonl", []
    for number, line in hub.zip_member_lines(path, member, where):
        if line.strip():
            try:
                numbered.append((number, json.loads(line)))
            except json.JSONDecodeError as exc:
                raise LongBenchError(f"{where}:{member}: line {number} is not JSON ({exc.msg})") from exc
    return check_records(numbered, f"{where}:{member}")


def fetch(keys: list[str] | None = None, progress=print) -> list[Path]:
    """data.zip once (pinned commit and sha256), each task's member checked and frozen as <cache>/longbench/<key>.jsonl."""
    progress(f"fetching LongBench: {SOURCE.where} [{LICENCE}]")
    fetched = hub.fetch_file(SOURCE, progress)
    where = f"{fetched.repo}@{fetched.commit[:12]}:{fetched.filename}"
    parsed = {key: member_records(fetched.path, key, where) for key in keys or list(TASKS)}  # all checked first
    written = []
    for key, records in parsed.items():
        path = cache_root() / "longbench" / f"{key}.jsonl"
        freeze(path, records, {"source": fetched.record(), "member": f"data/{key}.jsonl", "licence": LICENCE})
        progress(f"  {key}: {len(records)} records -> {path}")
        written.append(path)
    return written


PROMPTS_VERSION = 1


def prompts_key(key: str, records_hash: str, tokenizer_fp: str, length: int, samples: int | None) -> dict:
    return {"prompts": "longbench", "version": PROMPTS_VERSION, "task_version": TASKS[key].version, "key": key,
            "records": records_hash, "tokenizer": tokenizer_fp, "length": length, "samples": samples}


def prompts_path(key: dict) -> Path:
    """Where one unit's built prompts are frozen (apart from the fetched records in longbench/)."""
    return cache_root() / "longbench-prompts" / f"{key['key']}-L{key['length']}-{stable_hash(key)[:16]}.jsonl"
