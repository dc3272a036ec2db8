"""BABILong's published splits (RMT-team/babilong-1k-samples on the Hub: ``<split>/<task>-00000-of-00001.parquet``,
records ``input``, ``question``, ``target``; the splits named by length, 0k to 64k, counted in GPT-2's tokens; qa1-qa5
in each, qa6-qa20 in 0k too), read as
they are: `ccq-eval data fetch babilong` freezes each split's records in the cache with where they came from
(commit and sha256), and DATA_DIR/babilong-published/<split>/<task>.jsonl (or .json, .gz) holds a user's own copy.
A unit on a published split records that source, so its cells never sit under a generated one's."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.data import hub, local
from ccq_eval.data.cache import cache_root, content_hash, freeze
from ccq_eval.data.jsonl import read_jsonl
from ccq_eval.suites.babilong.babi import BabiError

REPO = "RMT-team/babilong-1k-samples"
FOLDER = "babilong-published"
SPLITS = ("0k", "1k", "2k", "4k", "8k", "16k", "32k", "64k")  # one parquet a task (128k on is sharded: not read here)
NO_HAYSTACK = "0k"  # the one split that holds qa6-qa20 too
FIELDS = ("input", "question", "target")
FETCH_COMMAND = "ccq-eval data fetch babilong"


def split_of(length: int) -> str:
    """The split a unit's length names: 1024 -> "1k" (the splits' own "k" is 1000 GPT-2 tokens)."""
    name = f"{length // 1024}k" if length % 1024 == 0 else str(length)
    if name not in SPLITS:
        raise BabiError(f"--lengths {length}: BABILong's published splits are {', '.join(SPLITS)} (as 0, 1024, 2048, "
                        "... tokens); use one of those lengths, or --babilong-source generated")
    return name


def check_records(numbered, where: str) -> list[dict]:
    records = []
    for number, record in numbered:
        if not isinstance(record, dict) or not all(isinstance(record.get(f), str) for f in FIELDS):
            raise BabiError(f"{where}: line {number}: needs string fields {', '.join(FIELDS)} (a BABILong split's "
                            "records)")
        if not record["target"].strip():
            raise BabiError(f"{where}: line {number}: 'target' is empty (an answer every output would match)")
        records.append({f: record[f] for f in FIELDS})
    if not records:
        raise BabiError(f"{where}: no records")
    return records


def records(task: str, split: str, data_dir: str | None) -> tuple[list[dict], str]:
    """(records, content hash) of one task's split: the user's copy, else the fetched one."""
    name = f"{split}/{task.removeprefix('babilong_')}"
    path = local.find(FOLDER, name, data_dir)
    if path is None:
        raise BabiError(local.not_found("BABILong's published split", [name], FOLDER, data_dir,
                                        "<split>/<qaN>.jsonl (input, question, target)", FETCH_COMMAND))
    read = check_records(read_jsonl(path, BabiError, "BABILong split")[0], f"BABILong split {str(path)!r}")
    return read, content_hash(read)


def hub_file(task: str, split: str) -> hub.HubFile:
    return hub.HubFile(REPO, f"{split}/{task.removeprefix('babilong_')}-00000-of-00001.parquet", None)


def fetch(splits: list[str] | None = None, progress=print) -> list[str]:
    """Every task's parquet of each split (sha256 checked against the hub's record), its records checked, frozen."""
    import pandas as pd

    done = []
    for split in splits or list(SPLITS):
        tasks = [f"qa{n}" for n in range(1, 21 if split == NO_HAYSTACK else 6)]
        for task in tasks:
            fetched = hub.fetch_file(hub_file(task, split), progress)
            rows = pd.read_parquet(fetched.path).to_dict("records")
            read = check_records(enumerate(rows, 1), f"{fetched.repo}:{fetched.filename}")
            freeze(cache_root() / FOLDER / split / f"{task}.jsonl", read, {"source": fetched.record()})
        done.append(split)
        progress(f"  {split}: qa1-{tasks[-1]} frozen")
    return done


def build(task: str, rows: list[dict], tokenizer, length: int, samples: int | None, variant: dict) -> list[dict]:
    """The split's first ``samples`` records (every one when None) as the driver's records: the reference's prompt
    around the published input (its statements' places are not published: none are recorded)."""
    from ccq_eval.suites.babilong.prompts import formatted_input

    qa = task.removeprefix("babilong_")
    out = []
    for index, row in enumerate(rows if samples is None else rows[:samples]):
        prompt = formatted_input(qa, row["input"], row["question"], **variant)
        out.append({"index": index, "story": index, "task": qa, "max_length": length, "prompt": prompt,
                    "question": row["question"], "target": row["target"], "facts": [], "references": [],
                    "fact_depths": [], "prompt_tokens": len(tokenizer(prompt)["input_ids"])})
    return out
