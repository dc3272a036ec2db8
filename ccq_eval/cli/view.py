"""`ccq-eval view`: the store as one self-contained HTML file (report/view/), opened from disk in any browser."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import add_store
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "view"
REPORT_NAME = "report.html"


def add(subparsers) -> None:
    view = subparsers.add_parser(NAME, help="write one offline HTML report: tables, figures, every sample, two "
                                            "models side by side")
    add_store(view)
    view.add_argument("--out", help=f"the HTML file (default {REPORT_NAME} beside the store)")
    view.add_argument("--labels", help="comma list: only these labels' runs (every table, figure and pair from them)")
    view.add_argument("--baseline", metavar="LABEL", help="add 'label − LABEL' delta rows to every table")
    view.add_argument("--compare", nargs=2, action="append", default=[], metavar=("A", "B"),
                      help="a compare page for A against B (every pair of a store of up to 16 labels has one)")
    view.add_argument("--prompts", action="store_true", help="embed whole S-NIAH prompts (expandable) beside the "
                                                             "needle's context; the file grows with every prompt")
    view.add_argument("--open", action="store_true", help="open the report in the system browser")


def output_file(args) -> Path:
    out = Path(args.out).expanduser() if args.out else Path(args.store).expanduser().parent / REPORT_NAME
    if out.is_dir():
        raise BadInput(f"--out {str(out)!r}: is a folder; pass a file path such as {str(out / REPORT_NAME)!r}")
    check_output_folder(out.parent, "--out", [out.name])
    return out


def check_labels(store, args) -> list[str] | None:
    known = store.labels()
    asked = [label for label in args.labels.split(",")] if args.labels else None
    named = [*(asked or []), *([args.baseline] if args.baseline else []), *(x for pair in args.compare for x in pair)]
    unknown = [label for label in named if label not in known]
    if unknown:
        raise BadInput(f"label {unknown[0]!r}: not in {args.store}; labels: {', '.join(known) or 'none yet'}")
    return asked


def handle(args) -> int:
    from ccq_eval.report.view import write_report
    from ccq_eval.store import Store

    out = output_file(args)
    store = Store(args.store, readonly=True)
    labels = check_labels(store, args)
    size = write_report(store, out, labels, args.baseline, [tuple(p) for p in args.compare], args.prompts)
    print(f"written: {out} ({size / 1e6:.1f} MB)")
    if args.open:
        import webbrowser

        webbrowser.open(out.resolve().as_uri())
    return 0
