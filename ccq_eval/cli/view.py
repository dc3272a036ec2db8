"""`ccq-eval view`: the store as one self-contained HTML file (view/), opened from disk in any browser."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ccq_eval.cli.common import add_store, open_for_reading
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "view"
REPORT_NAME = "report.html"


def add(subparsers) -> None:
    view = subparsers.add_parser(NAME, help="write one offline HTML report: tables, figures, every sample, two "
                                            "models side by side")
    add_store(view)
    view.add_argument("--out", help=f"the HTML file (default {REPORT_NAME} beside the store)")
    view.add_argument("--labels", action="append", help="comma list: only these labels' runs (every table, figure and "
                                                         "pair from them); repeat it for a label holding a comma")
    view.add_argument("--baseline", metavar="LABEL", help="add 'label − LABEL' delta rows to every table")
    view.add_argument("--compare", nargs=2, action="append", default=[], metavar=("A", "B"),
                      help="a compare page for A against B (every pair of a store of up to 16 labels has one)")
    view.add_argument("--prompts", action="store_true", help="embed whole S-NIAH prompts (expandable) beside the "
                                                             "needle's context; the file grows with every prompt")
    view.add_argument("--open", action="store_true", help="open the report in the system browser")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def output_file(args) -> Path:
    """The report's path, checked before any work: never the store (or its journal files), never a file that is not a
    report ccq-eval wrote, and under a folder (not a file) that can be written."""
    out = Path(args.out).expanduser() if args.out else Path(args.store).expanduser().parent / REPORT_NAME
    if out.is_dir():
        raise BadInput(f"--out {str(out)!r}: is a folder; pass a file path such as {str(out / REPORT_NAME)!r}")
    store = Path(args.store).expanduser()
    if any(_same_file(out, Path(f"{store}{suffix}")) for suffix in ("", "-wal", "-shm")):
        raise BadInput(f"--out {str(out)!r}: is the store itself; pass another file such as {REPORT_NAME!r}")
    parent = next((p for p in out.parents if p.exists()), None)
    if parent is not None and not parent.is_dir():
        raise BadInput(f"--out {str(out)!r}: {str(parent)!r} is a file, so nothing can be written under it; pass a "
                       f"file path in a folder, such as {REPORT_NAME!r}")
    if out.is_file():
        from ccq_eval.view.page import is_report

        with open(out, encoding="utf-8", errors="replace") as handle:
            head = handle.read(4096)
        if not is_report(head):
            raise BadInput(f"--out {str(out)!r}: exists and is not a report ccq-eval wrote; pass a new file name or "
                           "move it aside")
    check_output_folder(out.parent, "--out", [out.name])
    return out


def asked_labels(known: list[str], given: list[str] | None) -> list[str] | None:
    """``--labels`` values: each one a stored label as a whole (a label may hold a comma), else a comma list."""
    if not given:
        return None
    return [part for value in given for part in ([value] if value in known else value.split(","))]


def check_labels(store, args) -> list[str] | None:
    known = store.reads.labels()
    asked = asked_labels(known, args.labels)
    named = [*(asked or []), *([args.baseline] if args.baseline else []), *(x for pair in args.compare for x in pair)]
    unknown = [label for label in named if label not in known]
    if unknown:
        raise BadInput(f"label {unknown[0]!r}: not in {args.store}; labels: {', '.join(known) or 'none yet'}")
    same = next((a for a, b in args.compare if a == b), None)
    if same is not None:
        raise BadInput(f"--compare {same!r} {same!r}: a label against itself; name two different labels")
    return asked


def handle(args) -> int:
    from ccq_eval.view import write_report

    out = output_file(args)
    store = open_for_reading(args.store)
    labels = check_labels(store, args)
    try:
        size = write_report(store, out, labels, args.baseline, [tuple(p) for p in args.compare], args.prompts)
    except KeyboardInterrupt:
        print("ccq-eval: view interrupted; no report was written", file=sys.stderr)
        return 130
    except OSError as exc:  # the disk full or over quota, a path that refuses writes (/proc): nothing was left there
        raise BadInput(f"--out {str(out)!r}: the report could not be written ({exc.strerror or exc}); nothing was "
                       "written there") from None
    print(f"written: {out} ({size / 1e6:.1f} MB)")
    if args.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0
