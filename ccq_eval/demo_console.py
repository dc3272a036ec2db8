"""What `make demo` shows on the console: one progress line for all workers (evaluations done / total, the
jobs running now, elapsed time, an ETA from the jobs' relative costs), and at the end a summary of the few
numbers that matter, no wider than 100 columns. Workers report through an events file (one JSON object a
line: start / done); their own progress bars go to each job's log."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

WIDTH = 100


def report(events: Path, job: str, event: str, **fields) -> None:
    """A worker's line in the events file (appends of one short line are atomic on POSIX)."""
    with open(events, "a", encoding="utf-8") as handle:
        handle.write(json.dumps({"job": job, "event": event, "time": time.time(), **fields}) + "\n")


def read_events(events: Path) -> list[dict]:
    if not events.exists():
        return []
    lines = events.read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip().endswith("}")]


def clock(seconds: float) -> str:
    seconds = max(0, int(seconds))
    return f"{seconds // 60}:{seconds % 60:02d}"


def progress_line(events: list[dict], costs: dict[str, float], started: float, now: float) -> str:
    """'[ 7/30] 12:04 elapsed, ETA 5:10 | running: gla-tiny sniah, gdn-tiny longppl' in WIDTH columns."""
    done = {e["job"] for e in events if e["event"] == "done"}
    running = [e["job"] for e in events if e["event"] == "start" and e["job"] not in done]
    failed = sum(1 for e in events if e["event"] == "done" and e.get("status") != "ok")
    elapsed = now - started
    done_cost = sum(costs.get(j, 0.0) for j in done)
    total_cost = sum(costs.values()) or 1.0
    eta = f"ETA {clock(elapsed * (total_cost - done_cost) / done_cost)}" if done_cost else "ETA --"
    head = f"[{len(done):>2}/{len(costs)}] {clock(elapsed)} elapsed, {eta}" + (f", {failed} failed" if failed else "")
    tail = f" | running: {', '.join(running)}" if running else ""
    line = head + tail
    return line if len(line) <= WIDTH else line[: WIDTH - 3] + "..."


def watch(procs, events: Path, costs: dict[str, float], started: float, out=sys.stdout, every: float = 2.0) -> None:
    """Redraw the progress line until every worker has exited: in place on a terminal, otherwise a new
    line whenever the count of finished evaluations changes (logs stay readable)."""
    tty = out.isatty()
    last = None
    while True:
        alive = any(p.poll() is None for p in procs)
        line = progress_line(read_events(events), costs, started, time.time())
        if tty:
            out.write("\r" + line.ljust(WIDTH))
            out.flush()
        elif line.split("]")[0] != last:
            out.write(line + "\n")
            out.flush()
            last = line.split("]")[0]
        if not alive:
            break
        time.sleep(every)
    if tty:
        out.write("\n")
        out.flush()


def summary(store_path: Path, lengths: list[int], out_dir: Path) -> str:
    """Per model: S-NIAH-1 accuracy at the shortest and longest length and the held-out essays' perplexity
    (text of the training kind it never saw) at both,
    then where the full tables and figures are. Each line fits WIDTH columns."""
    from ccq_eval.store import Store
    from ccq_eval.suites.base import format_length

    store = Store(store_path, readonly=True)
    cells: dict[str, dict[tuple[str, int], float]] = {}
    for row in store.reads.metrics(tasks=("sniah_1", "longppl_essays_heldout"), primary_only=True):
        cells.setdefault(row.label, {})[(row.task, row.context_length)] = row.value
    short, long = min(lengths), max(lengths)

    def cell(values, task, length, digits):
        value = values.get((task, length))
        return f"{value:.{digits}f}" if value is not None else "-"

    name = max([len("model"), *(len(label) for label in cells)])
    name = min(name, 30)
    k = format_length
    lines = [f"{'model':<{name}}  {'S-NIAH-1 ' + k(short):>12} {'S-NIAH-1 ' + k(long):>12}  "
             f"{'held-out ppl ' + k(short):>16} {'held-out ppl ' + k(long):>16}"]
    for label in sorted(cells):
        values = cells[label]
        lines.append(f"{label[:name]:<{name}}  {cell(values, 'sniah_1', short, 0):>12} "
                     f"{cell(values, 'sniah_1', long, 0):>12}  {cell(values, 'longppl_essays_heldout', short, 2):>16} "
                     f"{cell(values, 'longppl_essays_heldout', long, 2):>16}")
    lines += pair_lines(store, short)
    lines += ["", f"full tables (csv, tex, md): {out_dir / 'tables'}", f"figures (png, pdf):         {out_dir / 'figures'}",
              f"store:                      {store_path}",
              f"report (open in a browser): {out_dir / 'report.html'}"]
    return "\n".join(line[:WIDTH] for line in lines)


def pair_lines(store, length: int) -> list[str]:
    """CCQ against its backbone at one length, a line per pair (a model with seeds: the mean ± sd of its
    per-seed deltas and how many seeds' own tests give p < 0.05): S-NIAH-1 points, held-out perplexity."""
    import numpy as np

    from ccq_eval.report.paired_tests import p_text
    from ccq_eval.suites.base import format_length
    from ccq_eval.catalogue.pairs import paired_cells, paired_results, seed_groups
    from ccq_eval.report.results import Results

    results = paired_results(paired_cells(Results(store)))
    if not results:
        return []
    columns = ((f"S1 {format_length(length)} acc", "S-NIAH-1", 1), (f"Essays (held out) {format_length(length)} ppl", "ppl", 2))
    lines = ["", f"CCQ minus its backbone at {format_length(length)}, same samples (p: McNemar / paired bootstrap):"]
    for (model, base), group in seed_groups(results).items():
        parts = []
        for column, name, digits in columns:
            found = [results[pair][column] for pair in group if column in results[pair]]
            if not found:
                continue
            if len(found) == 1:
                parts.append(f"{name} {found[0].delta:+.{digits}f} ({p_text(found[0].p_value)})")
            else:
                deltas = np.array([r.delta for r in found])
                significant = sum(r.p_value < 0.05 for r in found)
                parts.append(f"{name} {deltas.mean():+.{digits}f} ± {deltas.std(ddof=1):.{digits}f} "
                             f"({significant}/{len(found)} p<0.05)")
        seeds = f" ({len(group)} seeds)" if len(group) > 1 else ""
        lines.append(f"  {model} − {base}{seeds}: " + ", ".join(parts))
    return lines
