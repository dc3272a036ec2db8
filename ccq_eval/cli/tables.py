"""`ccq-eval tables`: every table the catalogue names, written as CSV, LaTeX and Markdown, one printed."""

from __future__ import annotations

from pathlib import Path

from ccq_eval.cli.common import DEFAULT_TABLES, add_store, catalogue_help, open_for_reading
from ccq_eval.errors import BadInput
from ccq_eval.output_paths import check_output_folder

NAME = "tables"


def add(subparsers) -> None:
    tables = subparsers.add_parser(NAME, help="render the paper's tables from the store")
    add_store(tables)
    tables.add_argument("--table", default="all", help=catalogue_help("table", "all (default)"))
    tables.add_argument("--average", help="lm table only: comma list of the tasks whose accuracy is averaged "
                                          "(default: the GDN paper's 8: lambada_openai and the 7 commonsense tasks)")
    tables.add_argument("--format", default="md", choices=("csv", "latex", "md"), help="what to print (every format is written)")
    tables.add_argument("--ci", action="store_true", help="show 95%% confidence intervals (and paired ones on "
                                                           "--baseline deltas: McNemar's exact p on S-NIAH, a paired "
                                                           "bootstrap on perplexity)")
    tables.add_argument("--reference", action="store_true", help="add the reported rows of results/reference/ "
                                                                 "(labelled '(reported)', never mixed with measured rows)")
    tables.add_argument("--baseline", metavar="LABEL", help="add 'label − LABEL' delta rows against this label")
    tables.add_argument("--out", default=DEFAULT_TABLES, help=f"folder for <table>.csv/.tex/.md (default {DEFAULT_TABLES})")


def handle(args) -> int:
    from ccq_eval.catalogue import render_table, table_names, tables_taking
    from ccq_eval.report.formats import EXTENSIONS
    from ccq_eval.report.results import Results

    names = table_names() if args.table == "all" else (args.table,)
    if any(name not in table_names() for name in names):
        raise BadInput(f"--table {args.table!r}: unknown; available: {', '.join(table_names())}, all")
    out = check_output_folder(Path(args.out), "--out", [f"{n}.{e}" for n in names for e in EXTENSIONS.values()])
    own = {"average": args.average.split(",")} if args.average else {}
    results = Results(open_for_reading(args.store))  # read once for every table
    for name in names:
        try:
            taken = {k: v for k, v in own.items() if args.table != "all" or name in tables_taking(k)}
            rendered = render_table(results, name, ci=args.ci, reference=args.reference, baseline=args.baseline,
                                    strict=args.table != "all", **taken)
        except ValueError as exc:
            raise BadInput(str(exc)) from exc
        if rendered is None:
            print(f"table {name}: nothing in {args.store} to show yet (skipped)")
            continue
        out.mkdir(parents=True, exist_ok=True)
        for fmt, text in rendered.items():
            (out / f"{name}.{EXTENSIONS[fmt]}").write_text(text)
        print(rendered[args.format])
        print(f"\nwritten: {', '.join(str(out / f'{name}.{e}') for e in EXTENSIONS.values())}\n")
    return 0
