"""The report at the paper's scale, side by side with the demo's scale, in one run: the full evaluation of two
models (S-NIAH 3 tasks x 4 lengths x 500 samples with their prompts frozen, LongBench 14 tasks x 200, longppl
6 corpora x 9 lengths x 100 documents, lm 9 tasks) and one unit of 100,000 samples. For each: the time
`ccq-eval view` takes to write the file, its size, and the time headless Chromium takes to show its first page
from disk (navigation start to the page drawn); medians over --repeats.

    python benchmarks/viewer_scale.py [--repeats 3]      (needs Debian's chromium + chromium-driver for the page times)
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.report_store import LM, LONGBENCH, LONGPPL, build_store  # noqa: E402

SCALES = {
    "demo-like (2 models, S-NIAH 2 x 3 x 25)": dict(sniah_tasks=("sniah_1", "sniah_2"), lengths=(1024, 2048, 4096),
                                                    samples=25, longbench_tasks=(), longppl_corpora=LONGPPL[:4],
                                                    longppl_lengths=(1024, 2048, 4096), documents=12, lm_tasks=()),
    "paper (2 models, full evaluation)": dict(sniah_tasks=("sniah_1", "sniah_2", "sniah_3"),
                                              lengths=(1024, 2048, 4096, 8192), samples=500, longbench_tasks=LONGBENCH,
                                              longbench_samples=200, longppl_corpora=LONGPPL,
                                              longppl_lengths=tuple(range(4096, 20481, 2048)), documents=100,
                                              lm_tasks=LM),
    "100,000 samples in one unit": dict(labels=("gla",), sniah_tasks=("sniah_1",), lengths=(1024,), samples=100_000,
                                        longbench_tasks=(), longppl_corpora=(), lm_tasks=(), failed=False),
}


def first_page_seconds(report: Path) -> float | None:
    from tests.browser.driver import chromium, missing

    if missing():
        return None
    with chromium() as driver:
        driver.get(report.resolve().as_uri() + "#runs")
        deadline = time.time() + 60
        while time.time() < deadline:
            shown = driver.execute_script("const m = performance.getEntriesByName('page-shown');"
                                          "return m.length ? m[0].startTime : null")
            if shown is not None:
                return shown / 1000
            time.sleep(0.05)
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from ccq_eval.view import write_report

    with tempfile.TemporaryDirectory(prefix="ccq-eval-viewer-") as folder:
        os.environ["CCQ_EVAL_CACHE"] = str(Path(folder) / "cache")
        print(f"{'scale':<42} {'samples':>8} {'write s':>8} {'size MB':>8} {'first page s':>13}")
        for name, options in SCALES.items():
            store = build_store(Path(folder) / f"{len(name)}.db", frozen=True, **options)
            samples = sum(len(store.reads.samples(u.id)) for u in store.reads.units(status="complete"))
            report = Path(folder) / "report.html"
            writes, pages = [], []
            for _ in range(args.repeats):
                start = time.perf_counter()
                size = write_report(store, report)
                writes.append(time.perf_counter() - start)
                pages.append(first_page_seconds(report))
            page = "no Chromium" if None in pages else f"{statistics.median(pages):.2f}"
            print(f"{name:<42} {samples:>8} {statistics.median(writes):>8.1f} {size / 1e6:>8.1f} {page:>13}", flush=True)
        print("targets: paper scale <= 20 MB and first page < 2 s; 100,000 samples written in < 60 s")


if __name__ == "__main__":
    main()
