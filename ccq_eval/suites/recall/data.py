"""The recall tasks' records and prompts. Records: DATA_DIR/recall/<key>.jsonl (or .json, .gz: data/jsonl.py), else the copy `ccq-eval data fetch
recall` froze in the cache from the reference's hub dataset (its validation parquet); every record checked before any
is used. Prompts: each record's document cut to the unit's length (cut.py), then the task's prompt; built once per
records, tokenizer, length and samples, and frozen in the cache."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.data import hub, local
from ccq_eval.data.cache import cache_root, freeze, stable_hash
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.errors import BadInput
from ccq_eval.suites.recall.cut import cut
from ccq_eval.suites.recall.tasks import MAX_GEN, REFERENCE_COMMIT, TASK_VERSION, TASKS

FETCH_COMMAND = "ccq-eval data fetch recall"
KEPT_FIELDS = ("context", "question", "answers", "alt_answers", "tok_pos", "orig_question", "doc_id", "text", "key",
               "value", "file_name")
PROMPTS_VERSION = 3


class RecallDataError(BadInput):
    """Recall records that are missing or malformed; the message names them and the fix."""


def check_records(task: str, numbered, where: str) -> list[dict]:
    """A string document and question (SWDE, FDA: key), and a non-empty list of string answers (contains_score
    takes their max) or one string value."""
    spec, records = TASKS[task], []
    for number, record in numbered:
        at = f"{where}: line {number}"
        for field in spec.fields:
            if not isinstance(record, dict) or not isinstance(record.get(field), str):
                raise RecallDataError(f"{at}: {field!r} must be a string; expected the protocol's records "
                                      f"({', '.join(spec.fields)}, {spec.target})")
        target = record.get(spec.target)
        if spec.target == "value" and not (isinstance(target, str) and target.strip()):
            raise RecallDataError(f"{at}: 'value' must be a non-empty string (an empty one is found in every "
                                  "prediction)")
        if spec.target == "answers" and (not isinstance(target, list) or not target
                                         or not all(isinstance(a, str) and a.strip() for a in target)):
            raise RecallDataError(f"{at}: 'answers' must be a non-empty list of non-empty strings (an empty answer "
                                  "is found in every prediction)")
        alternatives = record.get("alt_answers")
        if alternatives is not None and not (isinstance(alternatives, list)
                                             and all(isinstance(a, str) and a.strip() for a in alternatives)):
            raise RecallDataError(f"{at}: 'alt_answers' must be a list of non-empty strings (the reference matches "
                                  "each one in the document)")
        position = record.get("tok_pos")  # NQ: where the answer's token is, when the document does not hold it
        if position is not None and (type(position) is not int or position < 0):
            raise RecallDataError(f"{at}: 'tok_pos' must be a whole number of tokens (>= 0), not {position!r}")
        records.append({k: record[k] for k in KEPT_FIELDS if k in record})
    if not records:
        raise RecallDataError(f"{where}: no records")
    return records


def local_path(task: str, data_dir: str | None) -> Path | None:
    return local.find("recall", TASKS[task].key, data_dir)


def read_records(task: str, data_dir: str | None) -> list[dict]:
    return read_all([task], data_dir)[task]


def read_all(tasks, data_dir: str | None) -> dict[str, list[dict]]:
    """Every task's records, checked; records missing for any task are named together in one line."""
    paths = {task: local_path(task, data_dir) for task in tasks}
    if missing := [task for task, path in paths.items() if path is None]:
        keys = [TASKS[task].key for task in missing]
        wanted = "; ".join(f"{TASKS[t].key}.jsonl ({', '.join((*TASKS[t].fields, TASKS[t].target))})" for t in missing)
        raise RecallDataError(local.not_found("recall records", keys, "recall", data_dir, wanted, FETCH_COMMAND))
    return {task: check_records(task, read_jsonl(path, RecallDataError, "recall file")[0],
                                f"recall file {str(path)!r}") for task, path in paths.items()}


def build(task: str, records: list[dict], tokenizer, length: int, samples: int | None) -> list[dict]:
    """The unit's docs: each record (as the reference's validation_docs gives it) with its document cut, in the
    task's prompt; a record whose answer fields' first value has one character or none is left out, as the
    reference leaves it out; up to ``samples`` of them."""
    spec = TASKS[task]
    if length <= MAX_GEN:
        raise RecallDataError(f"--lengths {length}: no room for a document next to {task}'s {MAX_GEN} tokens")
    docs = []
    for number, record in enumerate(records):
        record = spec.prepare(record) if spec.prepare else record
        if spec.left_out(record):
            continue
        kept = cut(spec, record, tokenizer, length)
        prompt = spec.prompt({**record, spec.document: kept.context})
        docs.append({"index": len(docs), "record": number, "prompt": prompt, "question": spec.asked(record),
                     "answers": spec.answers(record), "prompt_tokens": len(tokenizer(prompt)["input_ids"]),
                     "document_tokens": kept.total, "kept_tokens": kept.kept, "answer_in_window": kept.answer_found,
                     "max_length": length})
        if samples is not None and len(docs) == samples:
            break
    if not docs:
        raise RecallDataError(f"{task}: no record is left to score; check the records' answers")
    return docs


def prompts_key(task: str, records_hash: str, tokenizer_fp: str, length: int, samples: int | None) -> dict:
    return {"prompts": "recall", "version": PROMPTS_VERSION, "task_version": TASK_VERSION, "task": task,
            "records": records_hash, "tokenizer": tokenizer_fp, "length": length, "samples": samples}


def prompts_path(key: dict) -> Path:
    return cache_root() / "recall-prompts" / f"{key['task']}-L{key['length']}-{stable_hash(key)[:16]}.jsonl"


def hub_file(task: str) -> hub.HubFile:
    """The task's validation parquet in its hub dataset (as datasets' push_to_hub lays one out); no commit is
    confirmed from here: main, resolved when fetched and recorded."""
    return hub.HubFile(TASKS[task].dataset, "*validation-*.parquet", None)


def parquet_records(path: Path) -> list[dict]:
    """The parquet's rows with the fields the protocol reads, lists as lists."""
    import pandas as pd

    def plain(field: str, value):  # parquet's arrays and numpy scalars as JSON's lists and numbers
        if hasattr(value, "__len__") and not isinstance(value, str):
            return [str(v) for v in value]
        value = value.item() if hasattr(value, "item") else value
        if isinstance(value, float) and (value != value or (field == "tok_pos" and value.is_integer())):
            # pandas reads an integer column with gaps as floats: a gap (NaN) is no value, a position a whole number
            return None if value != value else int(value)
        return value

    frame = pd.read_parquet(path)
    return [{k: v for k in KEPT_FIELDS if k in frame.columns and (v := plain(k, row[k])) is not None}
            for row in frame.to_dict("records")]


def fetch(tasks: list[str] | None = None, progress=print) -> list[Path]:
    """Each task's validation parquet (sha256 checked against the hub's record), every record checked, frozen as
    <cache>/recall/<key>.jsonl with where it came from."""
    written = []
    for task in tasks or list(TASKS):
        spec = TASKS[task]
        progress(f"fetching {spec.key}: {hub_file(task).where} (validation)")
        fetched = hub.fetch_file(hub_file(task), progress)
        records = check_records(task, enumerate(parquet_records(fetched.path), 1),
                                f"{fetched.repo}:{fetched.filename}")
        path = cache_root() / "recall" / f"{spec.key}.jsonl"
        freeze(path, records, {"source": fetched.record(),
                               "reference": f"HazyResearch/prefix-linear-attention@{REFERENCE_COMMIT}"})
        progress(f"  {spec.key}: {len(records)} records -> {path}")
        written.append(path)
    return written
