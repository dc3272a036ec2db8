"""What may share a label, and when a sharded run is whole: the rules `ingest` refuses by and every reader marks by.

- A label names one model under one protocol. Runs under one label must agree on the model (weights sha256, config,
  CCQ overrides, dtype) and the seeds; shards of one job must also have run the same command (its ``--shard``,
  ``--store`` and machine-only flags aside). Merging runs that disagree would put two models' or two protocols' cells
  in one table row, so `ingest` refuses them in one line.
- A run made with ``--shard I/N`` records its shard (``versions["shard"]``: index, count, the Slurm array job where
  there is one). The shards of one job are the runs of one label and model with the same count and job; while any
  index is missing from the store, every run of the job is *partial*: `runs`, the tables and the report say so.

Rows are store.rows.RunRow or plain dicts of a runs table (JSON columns as text or parsed)."""

from __future__ import annotations

import json
import shlex

IDENTITY = ("weights_sha256", "model_config", "ccq_overrides", "dtype", "seeds")
# flags that say where or how fast a shard ran, not what it computed
MACHINE_FLAGS = ("--shard", "--store", "--threads", "--rendezvous-timeout", "--device")


def _field(run, name: str):
    value = run[name] if isinstance(run, dict) else getattr(run, name)
    if isinstance(value, str) and name in ("model_config", "ccq_overrides", "seeds", "versions"):
        try:
            value = json.loads(value)
        except ValueError:
            pass
    return value


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def identity(run) -> str:
    """The model and seeds a run evaluated, as one comparable text."""
    return _canonical({name: _field(run, name) for name in IDENTITY})


def shard(run) -> tuple[int, int, str | None] | None:
    """(index, count, array job) of a sharded run, else None."""
    versions = _field(run, "versions")
    found = versions.get("shard") if isinstance(versions, dict) else None
    if not isinstance(found, dict) or not isinstance(found.get("index"), int) or not isinstance(found.get("count"), int):
        return None
    return found["index"], found["count"], found.get("job")


def protocol(run) -> str:
    """The command a run ran, without the flags that only say where or how fast (a shard's own index among them)."""
    try:
        words = shlex.split(_field(run, "command_line") or "")
    except ValueError:
        return _field(run, "command_line") or ""
    kept, skip = [], False
    for word in words[1:]:  # the program's own path differs between machines
        if skip:
            skip = False
        elif word in MACHINE_FLAGS:
            skip = True
        elif not word.startswith(tuple(f"{flag}=" for flag in MACHINE_FLAGS)):
            kept.append(word)
    return " ".join(kept)


def _short(text: str) -> str:
    return text if len(text) <= 80 else text[:77] + "..."


def conflict(runs: list[tuple[str, object]], new_from: int = 0) -> str | None:
    """The first disagreement of a run at or after position ``new_from`` of ``runs`` ((where it is, run)) with the
    first run of its label, as one line; None if none (runs before ``new_from``, a store's own, are not checked among
    themselves)."""
    first: dict[str, tuple[str, object]] = {}
    for position, (where, run) in enumerate(runs):
        label = _field(run, "label")
        if label not in first:
            first[label] = (where, run)
            continue
        if position < new_from:
            continue
        where_0, run_0 = first[label]
        for name in IDENTITY:
            if _canonical(_field(run, name)) != _canonical(_field(run_0, name)):
                return (f"label {label!r} would hold runs of two models: {name} differs between {where_0} "
                        f"({_short(_canonical(_field(run_0, name)))}) and {where} "
                        f"({_short(_canonical(_field(run, name)))}); merge them into separate stores, or rerun one "
                        "under another --label")
        s0, s1 = shard(run_0), shard(run)
        if s0 and s1 and s0[1:] == s1[1:] and protocol(run) != protocol(run_0):
            return (f"label {label!r}: shards of one job ran different commands ({where_0}: "
                    f"{_short(protocol(run_0))!r}; {where}: {_short(protocol(run))!r}); merge only shards of one "
                    "command")
    return None


def missing_shards(runs) -> dict[str, str]:
    """run id -> why it is partial ("shards 1, 2 of 3 are not in this store"), for every run of a sharded job whose
    shards are not all present."""
    jobs: dict[tuple, list] = {}
    for run in runs:
        if (found := shard(run)) is not None:
            jobs.setdefault((_field(run, "label"), identity(run), found[1], found[2]), []).append((found[0], run))
    partial = {}
    for (_, _, count, _), members in jobs.items():
        absent = sorted(set(range(count)) - {index for index, _ in members})
        if absent:
            why = (f"shard{'s' if len(absent) > 1 else ''} {', '.join(map(str, absent))} of {count} "
                   f"{'are' if len(absent) > 1 else 'is'} not in this store")
            partial.update({_field(run, "id"): why for _, run in members})
    return partial
