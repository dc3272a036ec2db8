"""A BABILong unit's records: its task's bAbI stories (DATA_DIR/babilong/<bAbI's file name>, else the first stories of
bAbI's test sets shipped with ccq-eval), the haystack its background sentences come from (``--haystack``; else PG19
where `ccq-eval data fetch longppl` has fetched it or DATA_DIR/longppl holds it; else the shipped essays), and the
samples built at the unit's length (noise.py), frozen in the cache once per data key."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.data.cache import cache_root, stable_hash
from ccq_eval.suites.babilong.babi import BabiError, Story, read_babi
from ccq_eval.suites.babilong.noise import sample_at_length

# bAbI v1.2's test files (tasks_1-20_v1-2/en/<name>); the first five's first stories ship with ccq-eval
TASK_NAMES = ("single-supporting-fact", "two-supporting-facts", "three-supporting-facts", "two-arg-relations",
              "three-arg-relations", "yes-no-questions", "counting", "lists-sets", "simple-negation",
              "indefinite-knowledge", "basic-coreference", "conjunction", "compound-coreference", "time-reasoning",
              "basic-deduction", "basic-induction", "positional-reasoning", "size-reasoning", "path-finding",
              "agents-motivations")
TASK_FILES = {f"qa{n}": f"qa{n}_{name}_test.txt" for n, name in enumerate(TASK_NAMES, 1)}
SHIPPED_TASKS = ("qa1", "qa2", "qa3", "qa4", "qa5")
PROMPT_VARIANTS = {"full": {}, "no-instruction": {"instruction": False}, "no-examples": {"examples": False},
                   "no-post-prompt": {"post_prompt": False},
                   "bare": {"instruction": False, "examples": False, "post_prompt": False}}
RECORDS_FOLDER = "babilong"
DATA_VERSION = 1  # what a frozen record holds; another form is other data


@dataclass(frozen=True)
class Stories:
    task: str
    source: str  # where they were read: "shipped" or the file's path
    fingerprint: str
    stories: tuple[Story, ...]


@dataclass(frozen=True)
class Background:
    name: str
    fingerprint: str
    documents: tuple[str, ...]


def stories(task: str, data_dir: str | None) -> Stories:
    """The task's bAbI stories: the user's file where DATA_DIR/babilong holds one, else the shipped subset (qa1-qa5)."""
    qa = task.removeprefix("babilong_")
    name = TASK_FILES[qa]
    mine = Path(data_dir) / "babilong" / name if data_dir else None
    if mine is not None and mine.exists():
        path, source = mine, str(mine)
    elif qa in SHIPPED_TASKS:
        path, source = Path(SHIPPED_RECORDS) / "babilong" / name, "shipped"
    else:
        raise BabiError(f"--tasks {qa}: its bAbI stories do not ship with ccq-eval; put bAbI's {name} (from "
                        f"tasks_1-20_v1-2/en) in {Path(data_dir or 'DATA_DIR') / 'babilong'}/, or run "
                        "--babilong-source published after `ccq-eval data fetch babilong --corpora 0k`")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise BabiError(f"bAbI file {str(path)!r}: cannot be read ({exc}); pass a UTF-8 text file in bAbI's format")
    read = read_babi(text, f"bAbI file {str(path)!r}")
    return Stories(task, source, stable_hash([[list(s.facts), s.question, s.answer] for s in read]), tuple(read))


def background(haystack: str | None, data_dir: str | None) -> Background:
    """--haystack's text; else PG19's test books where they are at hand; else the shipped essays."""
    from ccq_eval.suites.sniah.haystack import load_haystack, resolve_haystack_path

    path = resolve_haystack_path(haystack, data_dir)
    if path is None:
        from ccq_eval.suites.longppl import corpora

        pg19 = corpora.local_path("pg19", data_dir)
        if pg19 is not None:
            from ccq_eval.data.cache import file_sha256

            texts, _ = corpora.read_documents(pg19)
            return Background("pg19", file_sha256(pg19), tuple(texts))
    loaded = load_haystack(path)
    return Background(loaded.name, loaded.fingerprint, (loaded.text,))


def dataset_key(task: str, read: Stories, ground: Background | None, tokenizer_fp: str, length: int,
                samples: int | None, seed: int, prompt: str) -> dict:
    return {"generator": "babilong", "version": DATA_VERSION, "task": task, "stories": read.fingerprint,
            "haystack": ground.fingerprint if ground else None, "tokenizer": tokenizer_fp, "length": length, "samples": samples,
            "seed": seed, "prompt": prompt}


def records_path(key: dict) -> Path:
    return cache_root() / RECORDS_FOLDER / f"{stable_hash(key)}.jsonl"


def chosen(read: Stories, samples: int | None, seed: int) -> list[int]:
    """Which stories a unit asks about: a seeded draw without replacement (every one when ``samples`` is None or
    larger), as the reference draws its 100 samples at random."""
    import numpy as np

    order = np.random.default_rng([seed, 0xBAB1]).permutation(len(read.stories)).tolist()
    return order if samples is None else order[:samples]


def build(task: str, read: Stories, ground: Background, tokenizer, length: int, samples: int | None, seed: int,
          prompt: str) -> list[dict]:
    """One record a chosen story: its prompt at ``length`` (noise.py), question, target and where its facts sit."""
    variant = PROMPT_VARIANTS[prompt]
    return [{"index": index, "story": story, "task": task, "max_length": length,
             **sample_at_length(task, read.stories[story], list(ground.documents), tokenizer, length, [seed, story],
                                **variant)}
            for index, story in enumerate(chosen(read, samples, seed))]


def smallest_length(task: str, read: Stories, tokenizer, samples: int | None, seed: int, prompt: str) -> int:
    """The shortest length every chosen story's prompt and answer fit (its statements with no background at all)."""
    from ccq_eval.suites.babilong.noise import OUTPUT_TOKENS, prompt_overhead

    def needs(story: Story) -> int:
        facts = sum(len(tokenizer.encode(" " + fact, add_special_tokens=False)) for fact in story.facts)
        return prompt_overhead(task, story.question, tokenizer, **PROMPT_VARIANTS[prompt]) + facts + OUTPUT_TOKENS

    return max(needs(read.stories[i]) for i in chosen(read, samples, seed))
