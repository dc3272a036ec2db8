"""`ccq-eval view`: the store as one self-contained HTML file that opens from disk with no server and makes no
request. content.py reads what the pages show (from one results snapshot and the catalogue),
samples.py and compare.py the sample and compare pages' data, figures.py the figures as inert SVG, page.py
the file itself (its Content-Security-Policy, the escaped JSON), assets/ the page's script and style."""

from __future__ import annotations

import tempfile
from contextlib import contextmanager
from pathlib import Path


@contextmanager
def narrowed_to(store, labels: list[str] | None):
    """The store itself, or a temporary copy holding only the runs of ``labels`` (so that every table, figure
    and pair is drawn from those labels alone)."""
    if not labels:
        yield store
        return
    from ccq_eval.store import Store

    with tempfile.TemporaryDirectory(prefix="ccq-eval-view-") as folder:
        copy = Path(folder) / "labels.db"
        store.connection.copy_to(copy)
        narrowed = Store(copy)
        for run in narrowed.reads.runs():
            if run.label not in labels:
                narrowed.writes.delete_run(run.id)
        try:
            yield narrowed
        finally:
            narrowed.close()


def write_report(store, out: Path, labels: list[str] | None = None, baseline: str | None = None,
                 compare: list[tuple[str, str]] = (), whole_prompts: bool = False) -> int:
    """Writes the report of ``store`` to ``out``; returns its size in bytes."""
    from ccq_eval.data.cache import atomic_write
    from ccq_eval.report.results import Results
    from ccq_eval.view.content import figure_entries, report_content
    from ccq_eval.view.page import page

    with narrowed_to(store, labels) as source:
        results = Results(source)  # read once: every table, figure and page below is drawn from it
        text = page(report_content(results, baseline, compare, whole_prompts), figure_entries(results))
    atomic_write(out, text)  # a temporary name beside it, then renamed: nobody opens half a report
    out.chmod(0o644)  # a report is for others to read (the temporary file was private)
    return len(text.encode("utf-8"))
