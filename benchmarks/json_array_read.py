"""Reading a user's record file: the same records as one JSON array (an official file such as HotpotQA's
hotpot_dev_distractor_v1.json, 46.6 MB on one line; or written with indentation) and as JSON Lines, through the one
reader every suite uses (data/jsonl.py), side by side in one process, medians. The target: an array within 2x of
its JSON Lines copy (a reader that copies the rest of the text per record, or counts lines from the start, is
quadratic: minutes at this size).

    python benchmarks/json_array_read.py [--megabytes 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


def hotpot_like(index: int) -> dict:
    """A record shaped as HotpotQA's distractor rows: ten titled paragraphs of a few sentences."""
    sentences = [f"Sentence {s} in question {index} says something about the topic. " for s in range(4)]
    return {"_id": f"{index:024x}", "question": f"Which paragraph answers question {index}?", "answer": f"answer {index}",
            "type": "bridge", "level": "hard", "supporting_facts": [[f"Title {index} 0", 0]],
            "context": [[f"Title {index} {p}", list(sentences)] for p in range(10)]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from ccq_eval.data.jsonl import read_jsonl

    one = json.dumps(hotpot_like(0), ensure_ascii=False)
    records = [hotpot_like(i) for i in range(max(1, int(args.megabytes * 1e6 / len(one))))]
    folder = Path(tempfile.mkdtemp(prefix="ccq-json-read-"))
    files = {"JSON Lines": folder / "rows.jsonl", "array, one line": folder / "compact.json",
             "array, indented": folder / "indented.json"}
    files["JSON Lines"].write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    files["array, one line"].write_text(json.dumps(records, ensure_ascii=False))
    files["array, indented"].write_text(json.dumps(records, ensure_ascii=False, indent=1))
    medians = {}
    for name, path in files.items():
        times = []
        for _ in range(args.repeats):
            start = time.perf_counter()
            got, _ = read_jsonl(path, ValueError, "benchmark file")
            times.append(time.perf_counter() - start)
        assert [value for _, value in got] == records, name
        medians[name] = statistics.median(times)
    size = files["array, one line"].stat().st_size / 1e6
    print(f"{len(records)} HotpotQA-shaped records, {size:.1f} MB as an array; medians of {args.repeats}")
    for name, seconds in medians.items():
        ratio = seconds / medians["JSON Lines"]
        print(f"  {name:<17} {seconds:7.2f} s   {ratio:5.2f}x JSON Lines" + ("   (target: <= 2x)" if name != "JSON Lines" else ""))


if __name__ == "__main__":
    main()
