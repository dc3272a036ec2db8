"""The zoo's training logs as the repository keeps them: each build's per-step log (loss, answer loss, learning rate)
gzipped beside a summary table a reader can take in at a glance, so the logs do not outweigh the code.

    python -m ccq_eval.zoo_logs results/zoo-training      # gzip any plain log, rewrite README.md
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

# steps whose answer loss the summary shows: where the zoo's models turn (or do not)
MILESTONES = (300, 600, 1200, 1800)
SHIPPED_NOTE = ("The shipped zoo's builds; `not-shipped/` holds builds that did not ship (docs/zoo-and-demo.md says "
                "why). Each `.jsonl.gz` holds one JSON line per step: `step`, `loss` (the weighted training loss), "
                "`answer_loss` (the answer bytes' NLL, nats/byte), `lr`.")


def read_log(path: Path) -> list[dict]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def compress(path: Path) -> Path:
    """``x.jsonl`` -> ``x.jsonl.gz`` (no timestamp in the header, so the same log gives the same bytes)."""
    target = path.with_name(path.name + ".gz")
    with open(path, "rb") as plain, open(target, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0) as out:
        out.write(plain.read())
    path.unlink()
    return target


def _mean_loss(steps: list[dict]) -> float:
    return sum(s["loss"] for s in steps) / len(steps)


def summary_row(name: str, steps: list[dict]) -> str:
    by_step = {s["step"]: s for s in steps}
    answers = [f"{by_step[m]['answer_loss']:.3f}" if m in by_step else "" for m in MILESTONES]
    return (f"| {name} | {len(steps):,} | {_mean_loss(steps[:50]):.3f} | {_mean_loss(steps[-50:]):.3f} | "
            + " | ".join(answers) + " |")


def summary(folder: Path) -> str:
    header = ("| build | steps | loss, first 50 steps | loss, last 50 steps | "
              + " | ".join(f"answer loss @ {m:,}" for m in MILESTONES) + " |")
    lines = ["# Zoo training logs", "", SHIPPED_NOTE, ""]
    for title, where in (("Shipped", folder), ("Not shipped", folder / "not-shipped")):
        logs = sorted(where.glob("*.jsonl.gz"))
        if logs:
            lines += [f"## {title}", "", header, "|" + "---|" * (4 + len(MILESTONES))]
            lines += [summary_row(p.name.removesuffix(".jsonl.gz"), read_log(p)) for p in logs] + [""]
    return "\n".join(lines)


def main(argv: list[str]) -> None:
    folder = Path(argv[0])
    for path in [*folder.glob("*.jsonl"), *folder.glob("not-shipped/*.jsonl")]:
        compress(path)
    (folder / "README.md").write_text(summary(folder))


if __name__ == "__main__":
    main(sys.argv[1:])
