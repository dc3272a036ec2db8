"""What a user asks for (RunRequest), and what follows from it alone: label, CCQ overrides, shard."""

from __future__ import annotations

import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

from ccq_eval.suites.base import SuiteError


@dataclass
class RunRequest:
    model: str
    suite: str
    tasks: str | None = None
    lengths: str | None = None
    samples: int | None = None
    label: str | None = None
    store: str = "results/ccq.db"
    data_dir: str | None = None
    seed: int = 0
    device: str = "auto"
    dtype: str | None = None
    batch_size: int | str | None = None  # None: the device's default; "auto": probed (run/batching.py)
    force: bool = False
    dry_run: bool = False
    allow_pickle: bool = False
    ccq_lambda: float | None = None
    ccq_sigma_scale: str | None = None
    options: dict[str, str] = field(default_factory=dict)  # the flags only one suite reads (Suite.options)
    shard: str | None = None  # "i/n": this job runs the i-th of n deterministic slices of the units
    threads: int | None = None  # torch threads; None: machine.choose_threads decides
    kernels: str = "auto"  # ccq-eval's own kernels: auto (each checked first), own (unchecked), reference (never)
    rendezvous_timeout: float = 5.0  # minutes the data-parallel ranks wait for each other before naming the absent
    command_line: str = field(default_factory=lambda: shlex.join(sys.argv))


def parse_shard(text: str | None, environ=None) -> tuple[int, int] | None:
    """``i/n``; ``slurm``: this job array task's place in its array (SLURM_ARRAY_TASK_ID, _MIN, _STEP, _COUNT: an
    array 1-8 or 0-15:4 numbered from 0); ``auto``: the array's place inside one, else no shard."""
    if not text:
        return None
    if text in ("slurm", "auto"):
        return slurm_shard(text, os.environ if environ is None else environ)
    try:
        index, count = (int(x) for x in text.split("/"))
    except ValueError:
        raise SuiteError(f"--shard {text!r}: expected i/n, e.g. 0/4 (0-based), slurm or auto") from None
    if count < 1 or not 0 <= index < count:
        raise SuiteError(f"--shard {text!r}: need 0 <= i < n")
    return index, count


def slurm_shard(text: str, environ) -> tuple[int, int] | None:
    if "SLURM_ARRAY_TASK_ID" not in environ:
        if text == "auto":
            return None
        raise SuiteError("--shard slurm: SLURM_ARRAY_TASK_ID is not set (this is not a Slurm job array task); submit "
                         "with sbatch --array, or pass --shard I/N")
    try:
        task, count = int(environ["SLURM_ARRAY_TASK_ID"]), int(environ["SLURM_ARRAY_TASK_COUNT"])
        first, step = int(environ.get("SLURM_ARRAY_TASK_MIN", 0)), int(environ.get("SLURM_ARRAY_TASK_STEP", 1))
    except (KeyError, ValueError) as exc:
        raise SuiteError(f"--shard {text}: Slurm's array variables are incomplete or not numbers ({exc}); pass "
                         "--shard I/N") from None
    if step < 1 or count < 1:
        raise SuiteError(f"--shard {text}: Slurm's array step {step} and count {count} must be at least 1; pass "
                         "--shard I/N")
    index, off_step = divmod(task - first, step)
    if off_step or not 0 <= index < count:
        raise SuiteError(f"--shard {text}: array task {task} is not one of {count} tasks from {first} by {step} "
                         f"({', '.join(str(first + step * i) for i in range(min(count, 4)))}{', ...' if count > 4 else ''});"
                         " pass --shard I/N")
    return index, count


def select_shard(units: list, shard: tuple[int, int] | None) -> list:
    """Whole (suite, task) groups go round-robin to shards, in planning order (deterministic; a
    longppl corpus's lengths share one pass, so they stay together)."""
    if shard is None:
        return units
    index, count = shard
    groups = list(dict.fromkeys((u.suite, u.task) for u in units))
    mine = {g for j, g in enumerate(groups) if j % count == index}
    return [u for u in units if (u.suite, u.task) in mine]


def ccq_overrides(request: RunRequest) -> dict:
    overrides = {}
    if request.ccq_lambda is not None:
        # + 0.0: -0.0 is 0 (one contraction, one label, one unit key)
        overrides.update(ccq_fixed_lambda=float(request.ccq_lambda) + 0.0,
                         ccq_sigma_scale=request.ccq_sigma_scale or "trace")
    elif request.ccq_sigma_scale is not None:
        overrides["ccq_sigma_scale"] = request.ccq_sigma_scale
    return overrides


def check_label(label: str | None, flag: str = "--label") -> None:
    """A label typed at a flag: refused in one line (exit 2) when it is empty or holds a control character."""
    from ccq_eval.text import label_problem

    if label is not None and (problem := label_problem(label)) is not None:
        raise SuiteError(f"{flag} {label!r}: {problem}")


def default_label(request: RunRequest) -> str:
    if request.label is not None:
        check_label(request.label)
        return request.label
    from ccq_eval.models.hub_checkpoint import is_hub_spec

    name = request.model[4:] if request.model.startswith("zoo:") else Path(request.model.rstrip("/")).name
    if is_hub_spec(request.model):
        name = name.split("@")[0]  # ORG/NAME@REV: the label is NAME
    overrides = ccq_overrides(request)
    if "ccq_fixed_lambda" in overrides:
        name += f"+ccq{overrides['ccq_fixed_lambda']:g}"
        if overrides["ccq_sigma_scale"] != "trace":
            name += f"-{overrides['ccq_sigma_scale']}"
    from ccq_eval.text import label_problem

    if (problem := label_problem(name)) is not None:  # the same check as --label's
        raise SuiteError(f"--model {request.model!r}: the label taken from its name, {name!r}, "
                         f"{problem.split(';')[0]}; pass --label NAME")
    return name
