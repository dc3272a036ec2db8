"""`ccq-eval curves`: every figure the catalogue names that the store has data for, as PNG and PDF."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import DEFAULT_FIGURES, add_store, catalogue_help, open_for_reading
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "curves"


def add(subparsers) -> None:
    curves = subparsers.add_parser(NAME, help="draw figures from the store")
    add_store(curves)
    curves.add_argument("--figure", help=catalogue_help("figure", "or every figure with data (default)"))
    curves.add_argument("--out", default=DEFAULT_FIGURES, help=f"folder for <figure>.png/.pdf (default {DEFAULT_FIGURES})")


def handle(args) -> int:
    from ccq_eval.catalogue import draw_figure, figure_names
    from ccq_eval.report.figures import write_figure
    from ccq_eval.report.results import Results

    if args.figure is not None and args.figure not in figure_names():
        raise BadInput(f"--figure {args.figure!r}: unknown; available: {', '.join(figure_names())}")
    names = [args.figure] if args.figure else list(figure_names())
    out = check_output_folder(Path(args.out), "--out", [f"{n}.{e}" for n in names for e in ("png", "pdf")])
    results = Results(open_for_reading(args.store))  # read once for every figure
    drawn = 0
    for name in names:
        fig = draw_figure(results, name)
        if fig is None:
            if args.figure:
                print(f"figure {name}: nothing in {args.store} to draw yet (skipped)")
            continue
        print("written: " + ", ".join(map(str, write_figure(fig, out, name))))
        drawn += 1
    if not args.figure and not drawn:
        print(f"no figure to draw: {args.store} holds no results any figure draws ({', '.join(names)})")
    return 0
