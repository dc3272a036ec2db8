"""`ccq-eval`: run suites into the store, list and delete runs, render tables and figures.

    ccq-eval --model CKPT --suite sniah [...]     (the same as `ccq-eval run ...`)
    ccq-eval runs [--delete ID]
    ccq-eval tables [--table all|lm|sniah|sniah-partial|longppl|longbench|efficiency|seeds|pairs] [--format csv|latex|md]
                    [--ci] [--reference] [--baseline LABEL] [--out DIR]
    ccq-eval curves [--figure longppl|sniah-depth|efficiency] [--out DIR]
    ccq-eval data fetch longppl|longbench|lm [--corpora ...]
    ccq-eval ingest OTHER.db|LM_EVAL_RESULTS.json|LM_EVAL_OUTPUT_DIR ... [--label NAME] [--store results/ccq.db]
    ccq-eval export RUN_ID --format lm-eval [--out DIR]
    ccq-eval env [--device auto|cpu|cuda] [--json]
    ccq-eval lm-eval LM_EVAL_ARGS ...              (lm-eval's own CLI with fla, CCQ and the task plugins registered)
    ccq-eval include-path                          (the task plugins' folder, for stock lm_eval --include_path)
    ccq-eval zoo build [--steps N] [--models gla-tiny,...]

Exit codes: 0 every unit complete; 1 a unit failed; 2 bad input (one line on stderr, nothing written);
130 Ctrl-C, 143 SIGTERM (finished units are kept; rerun to resume).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

DEFAULT_STORE = "results/ccq.db"
DEFAULT_TABLES = "results/tables"
DEFAULT_FIGURES = "results/figures"
SUBCOMMANDS = ("run", "runs", "tables", "curves", "data", "ingest", "export", "env", "zoo", "lm-eval", "include-path")


from ccq_eval.errors import BadInput, StoreWriteFailure
from ccq_eval.output_paths import check_output_folder


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own mistakes get the same one-line form and exit code 2
        raise BadInput(f"{message} (see {self.prog} --help)")


def _number(kind: type, low, high, what: str):
    """An argparse type: a finite number of ``kind`` in [low, high], refused at parse time (exit 2), not deep
    inside numpy or a model after the work has started."""
    def parse(text: str):
        try:
            value = kind(text)
        except (ValueError, OverflowError):
            raise argparse.ArgumentTypeError(f"{text!r} is not {'an integer' if kind is int else 'a number'}") from None
        if not low <= value <= high:  # NaN fails both comparisons
            raise argparse.ArgumentTypeError(f"{text} is outside [{low}, {high}]: {what}")
        return value
    return parse


MAX_SAMPLES = 10_000_000  # more items per unit than any suite's data holds


def _add_store(parser):
    parser.add_argument("--store", default=DEFAULT_STORE,
                        help=f"SQLite results store (default {DEFAULT_STORE}); raw lm-eval JSON goes to raw/ beside it")


def _add_suite_options(run) -> None:
    """Each suite's own flags, as its registry entry declares them."""
    from ccq_eval.suites import SUITES

    owner = {}
    for suite in SUITES.values():
        for option in suite.options:
            if option.name in owner:
                raise RuntimeError(f"suites {owner[option.name]!r} and {suite.name!r} both declare --{option.name}")
            owner[option.name] = suite.name
            run.add_argument(f"--{option.name}", dest=f"suite_option_{option.name}", metavar=option.name.upper(),
                             help=f"{suite.name}: {option.help}")


def _suite_options(args) -> dict[str, str]:
    from ccq_eval.suites import SUITES

    return {o.name: getattr(args, f"suite_option_{o.name}") for s in SUITES.values() for o in s.options
            if getattr(args, f"suite_option_{o.name}", None) is not None}


def build_parser() -> argparse.ArgumentParser:
    from ccq_eval.suites import ALL_ORDER, SUITES

    parser = _Parser(prog="ccq-eval", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    run = sub.add_parser("run", help="run a suite on a checkpoint and store every number with its provenance")
    run.add_argument("--model", required=True, help="checkpoint folder (config.json, safetensors, tokenizer), zoo:<name>, "
                     "or ORG/NAME[@REVISION] on the Hugging Face Hub")
    run.add_argument("--suite", required=True, help=f"suite to run: {', '.join(SUITES)}, or all "
                                                    f"({', '.join(ALL_ORDER)} in one run record)")
    run.add_argument("--tasks", help="comma list of the suite's task ids (sniah_1 or just 1); default: all")
    run.add_argument("--lengths", help="context budgets in tokens of the model's tokenizer, e.g. 1k,2k,4k,8k (k = 1024); "
                                       "S-NIAH: prompt + 128 generated tokens <= L (default 1k,2k,4k,8k)")
    run.add_argument("--samples", type=_number(int, 1, MAX_SAMPLES, "items per unit"), help="items per unit (S-NIAH: samples per task and length, default 500; "
                                                 "longppl: sequences per corpus, default 100)")
    run.add_argument("--label", help="the model's name in tables and plots (default: checkpoint folder or zoo name, "
                                     "plus any CCQ override, e.g. gla-tiny+ccq0.3)")
    _add_store(run)
    run.add_argument("--data-dir", help="local data root (haystack/*.txt|*.jsonl for S-NIAH-2/3)")
    run.add_argument("--seed", type=_number(int, 0, 2**32 - 1, "numpy's seeds"), default=0, help="seed for data generation and lm-eval (default 0)")
    run.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda[:N]")
    run.add_argument("--dtype", help="float32, bfloat16 or float16 (default: float32 on CPU, bfloat16 on CUDA)")
    run.add_argument("--batch-size", default="auto",
                     help="batch size, or auto (default): 1 on CPU, the largest power of two up to 64 that fits on a GPU")
    run.add_argument("--force", action="store_true", help="rerun units that are already complete in the store")
    run.add_argument("--dry-run", action="store_true", help="list the units that would run and which are done; run nothing")
    run.add_argument("--allow-pickle", action="store_true", help="allow pickle weights (pytorch_model.bin): they can run code")
    run.add_argument("--ccq-lambda", type=_number(float, 0.0, 100.0, "a contraction strength"), help="training-free CCQ on a GLA / GDN / DeltaNet / RetNet / HGRN2 checkpoint: fixed lambda "
                                                      "(with Sigma scaled by its trace unless --ccq-sigma-scale none)")
    run.add_argument("--ccq-sigma-scale", choices=("none", "trace"), help="how Sigma is scaled before use")
    run.add_argument("--threads", type=_number(int, 1, 1024, "torch CPU threads"),
                     help="torch CPU threads (default: OMP_NUM_THREADS when set, else the cores other work leaves "
                          "free at start; see ccq-eval env)")
    run.add_argument("--shard", metavar="I/N", help="run only the I-th of N deterministic slices of the units "
                                                    "(0-based; for job arrays; merge stores with ccq-eval ingest)")
    _add_suite_options(run)

    runs = sub.add_parser("runs", help="list runs in the store, or delete one")
    _add_store(runs)
    runs.add_argument("--delete", metavar="ID", help="delete this run and its units, metrics and samples")

    tables = sub.add_parser("tables", help="render the paper's tables from the store")
    _add_store(tables)
    tables.add_argument("--table", default="all", help="which table: lm, sniah, sniah-partial, longppl, longbench, efficiency, seeds (mean ± sd over NAME, "
                                                        "NAME-s1, ...), pairs (ccq-NAME and NAME+ccq<lambda> against NAME "
                                                        "on the same samples, with paired tests), all (default)")
    tables.add_argument("--average", help="lm table: comma list of the tasks whose accuracy is averaged "
                                          "(default: the GDN paper's 8: lambada_openai and the 7 commonsense tasks)")
    tables.add_argument("--format", default="md", choices=("csv", "latex", "md"), help="what to print (every format is written)")
    tables.add_argument("--ci", action="store_true", help="show 95%% confidence intervals (and paired ones on "
                                                           "--baseline deltas: McNemar's exact p on S-NIAH, a paired "
                                                           "bootstrap on perplexity)")
    tables.add_argument("--reference", action="store_true", help="add the reported rows of results/reference/ "
                                                                 "(labelled '(reported)', never mixed with measured rows)")
    tables.add_argument("--baseline", metavar="LABEL", help="add 'label − LABEL' delta rows against this label")
    tables.add_argument("--out", default=DEFAULT_TABLES, help=f"folder for <table>.csv/.tex/.md (default {DEFAULT_TABLES})")

    curves = sub.add_parser("curves", help="draw figures from the store")
    _add_store(curves)
    curves.add_argument("--figure", help="which figure: longppl, sniah-depth, efficiency (default: every figure with data)")
    curves.add_argument("--out", default=DEFAULT_FIGURES, help=f"folder for <figure>.png/.pdf (default {DEFAULT_FIGURES})")
    ingest = sub.add_parser("ingest", help="merge stores from other machines or shards, or lm-eval results JSON, "
                                           "into --store (idempotent)")
    ingest.add_argument("paths", nargs="+", metavar="PATH", help="stores to merge in; or lm-eval results_*.json files "
                        "(or the --output_path folders holding them; --log_samples files beside them come along)")
    ingest.add_argument("--label", help="lm-eval results: the model's name in tables (default: the checkpoint folder's name)")
    _add_store(ingest)

    export = sub.add_parser("export", help="write a run in another tool's results layout")
    export.add_argument("run_id", metavar="RUN_ID", help="the run (see ccq-eval runs)")
    export.add_argument("--format", required=True, choices=("lm-eval",), help="lm-eval: results_<date>.json and "
                        "samples_<task>_<date>.jsonl, as lm-eval --output_path --log_samples writes them")
    export.add_argument("--out", default="results/lm-eval", help="folder (default results/lm-eval)")
    _add_store(export)

    env = sub.add_parser("env", help="versions, device, kernel path per family, threads, cache and store locations "
                                     "(what every run records)")
    env.add_argument("--device", default="auto", help="auto (CUDA when available), cpu or cuda[:N]")
    _add_store(env)
    env.add_argument("--json", action="store_true", help="print the record as JSON")

    sub.add_parser("lm-eval", help="lm-eval's own command line (all its arguments follow) with fla's and the CCQ "
                                   "families registered and the task plugins on --include_path; pretrained=zoo:NAME works",
                   add_help=False)
    sub.add_parser("include-path", help="print the task plugins' folder (stock lm_eval --include_path $(ccq-eval include-path))")

    zoo = sub.add_parser("zoo", help="train the tiny model zoo on CPU (resumable)")
    zoo.add_argument("action", choices=("build",))
    zoo.add_argument("--steps", type=_number(int, 1, MAX_SAMPLES, "training steps"), help="training steps per model (default: each model's shipped recipe)")
    zoo.add_argument("--threads", type=_number(int, 1, 1024, "torch CPU threads"), help="torch CPU threads (default: torch's; run two builds with 1 each on 2 cores)")
    zoo.add_argument("--models", help="comma list of zoo names (default: all of them)")
    zoo.add_argument("--work", default="results/zoo-work", help="checkpoints and loss logs (resumed from)")
    zoo.add_argument("--out", help="where the exported models go (default: ccq_eval/zoo/ in the package)")

    data = sub.add_parser("data", help="fetch datasets on a machine with network access")
    data.add_argument("action", choices=("fetch",))
    data.add_argument("suite", choices=[s.name for s in SUITES.values() if s.fetches_data])
    data.add_argument("--corpora", help="comma list of corpora / LongBench keys (default: all)")
    return parser


def _is_lm_eval_output(path: str) -> bool:
    from ccq_eval.interchange.lm_eval_results import is_results_file

    folder = Path(path)
    return is_results_file(folder) or (folder.is_dir() and any(folder.rglob("results_*.json")))


def _ingest_lm_eval(args) -> int:
    from ccq_eval.interchange.lm_eval_results import read_results, results_files
    from ccq_eval.store import Store

    files = [f for path in args.paths for f in results_files(Path(path))]
    read = [(f, *read_results(f, args.label)) for f in files]  # every file checked before the store is touched
    target = Store(args.store)
    for path, run, units, left_out in read:
        if not units:
            print(f"{path}: nothing to add" + (f"; left out {'; '.join(left_out)}" if left_out else ""))
            continue
        run_id, added, skipped = target.add_finished_run(run, units)
        print(f"{path}: " + (f"{added} lm units added as run {run_id} labelled {run['label']!r}" if added else
                             "nothing new")
              + (f"; {skipped} already here" if skipped else "")
              + (f"; left out {'; '.join(left_out)}" if left_out else ""))
    return 0


def _export(args) -> int:
    from ccq_eval.interchange.lm_eval_results import export_run
    from ccq_eval.store import Store

    if not Path(args.store).exists():
        raise BadInput(f"--store {args.store!r}: no such store (pass the --store that holds run {args.run_id})")
    out = check_output_folder(Path(args.out), "--out", [])
    for path in export_run(Store(args.store, readonly=True), args.run_id, out):
        print(f"written: {path}")
    return 0


def _ingest(args) -> int:
    from ccq_eval.store import Store

    kinds = {_is_lm_eval_output(path) for path in args.paths}
    if kinds == {True}:
        return _ingest_lm_eval(args)
    if len(kinds) > 1:
        raise BadInput("ingest: stores and lm-eval results in one command; ingest each kind in its own command")
    if args.label:
        raise BadInput("--label: only for lm-eval results (a store's runs keep their own labels)")
    sources = [Store(path, readonly=True) for path in args.paths]  # every source validated before any write
    for source in sources:
        source.check_integrity()  # a damaged page fails here, before the target is created or touched
    target = Store(args.store)
    refused_any = False
    with target.transaction():  # one transaction: a source that fails mid-read merges nothing at all
        reports = [(path, *target.ingest(source)) for path, source in zip(args.paths, sources)]
    for path, added_runs, added_units, already_complete, refused in reports:
        print(f"{path}: {added_runs} runs, {added_units} units added"
              + (f"; {already_complete} complete units skipped (a result for their unit key is already here)"
                 if already_complete else "")
              + (f"; refused {len(refused)}: " + "; ".join(refused) if refused else ""))
        refused_any |= bool(refused)
    return 1 if refused_any else 0


def _env(args) -> int:
    import json

    import torch

    from ccq_eval.machine import choose_threads, describe, environment

    device = args.device
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    try:
        torch.device(device)
    except RuntimeError as exc:
        raise BadInput(f"--device {args.device!r}: not a device ({exc}); use auto, cpu or cuda[:N]") from None
    if torch.device(device).type == "cuda" and not torch.cuda.is_available():
        raise BadInput(f"--device {args.device!r}: this torch sees no CUDA device; use --device cpu")
    threads, why = choose_threads(None)  # what a run started now would use
    torch.set_num_threads(threads)
    record = environment(device, args.store, why)
    print(json.dumps(record, indent=2) if args.json else describe(record))
    return 0


def _include_path(args) -> int:
    from ccq_eval.lm.stock_cli import include_path

    print(include_path())
    return 0


def _zoo(args) -> int:
    from ccq_eval import zoo_build
    from ccq_eval.models.loading import zoo_dir

    names = args.models.split(",") if args.models else list(zoo_build.ZOO)
    unknown = [n for n in names if n not in zoo_build.ZOO]
    if unknown:
        raise BadInput(f"--models: unknown {', '.join(unknown)}; available: {', '.join(zoo_build.ZOO)}")
    if args.steps is not None and args.steps < 1:
        raise BadInput(f"--steps {args.steps}: must be at least 1")
    if args.threads:
        import torch

        torch.set_num_threads(args.threads)
    out = Path(args.out) if args.out else zoo_dir()
    for name in names:
        spec = zoo_build.ZOO[name]
        card = zoo_build.train(spec, spec.recipe(args.steps), Path(args.work), out)
        print(f"{name}: {card['steps']} steps, final loss {card['final_loss_nats_per_byte']:.3f} -> {out / name}")
    return 0


def _data(args) -> int:
    from ccq_eval.data.cache import check_cache_root
    from ccq_eval.suites import get_suite

    suite = get_suite(args.suite)
    known = suite.fetchable()
    corpora = args.corpora.split(",") if args.corpora else None
    unknown = [c for c in corpora or [] if c not in known]
    if unknown:
        raise BadInput(f"--corpora: unknown {', '.join(unknown)}; available: {', '.join(known)}")
    check_cache_root()
    for done in suite.fetch(corpora):
        print(f"fetched {done}")
    return 0


def _batch_size(value: str) -> int | str:
    if value == "auto":
        return value
    if not value.isdigit() or not 1 <= int(value) <= 4096:
        raise BadInput(f"--batch-size {value}: must be an integer in [1, 4096] or auto")
    return int(value)


def _run(args) -> int:
    from ccq_eval.run import RunRequest, run_suite

    request = RunRequest(
        model=args.model, suite=args.suite, tasks=args.tasks, lengths=args.lengths, samples=args.samples,
        label=args.label, store=args.store, data_dir=args.data_dir, seed=args.seed,
        device=args.device, dtype=args.dtype, batch_size=_batch_size(args.batch_size), force=args.force, dry_run=args.dry_run,
        allow_pickle=args.allow_pickle, ccq_lambda=args.ccq_lambda, ccq_sigma_scale=args.ccq_sigma_scale,
        options=_suite_options(args), shard=args.shard, threads=args.threads)
    return run_suite(request)


def _runs(args) -> int:
    from ccq_eval.store import Store

    if args.delete is not None and not args.delete.strip():
        raise BadInput("--delete '': pass the id of a run (see ccq-eval runs)")
    if args.delete and not Path(args.store).exists():
        raise BadInput(f"--delete {args.delete!r}: no store {args.store!r} (pass the --store that holds the run)")
    store = Store(args.store, readonly=args.delete is None)
    if args.delete:
        if not store.delete_run(args.delete):
            raise BadInput(f"--delete {args.delete!r}: no run with that id in {args.store} (see ccq-eval runs)")
        print(f"deleted run {args.delete}")
        return 0
    rows = store.query("SELECT r.id, r.label, r.started, r.status, COUNT(u.id) AS units, "
                       "SUM(u.status = 'complete') AS complete FROM runs r LEFT JOIN units u ON u.run_id = r.id "
                       "GROUP BY r.id ORDER BY r.started")
    print(f"{'id':<38}{'label':<24}{'started':<27}{'status':<12}units")
    for r in rows:
        print(f"{r['id']:<38}{r['label'][:23]:<24}{r['started']:<27}{r['status']:<12}{r['complete'] or 0}/{r['units']}")
    return 0


def _tables(args) -> int:
    from ccq_eval.report.formats import EXTENSIONS
    from ccq_eval.store import Store
    from ccq_eval.views import render_table, table_names

    names = table_names() if args.table == "all" else (args.table,)
    if any(name not in table_names() for name in names):
        raise BadInput(f"--table {args.table!r}: unknown; available: {', '.join(table_names())}, all")
    out = check_output_folder(Path(args.out), "--out", [f"{n}.{e}" for n in names for e in EXTENSIONS.values()])
    store = Store(args.store, readonly=True)
    for name in names:
        try:
            rendered = render_table(store, name, ci=args.ci, reference=args.reference, baseline=args.baseline,
                                    strict=args.table != "all",
                                    average=args.average.split(",") if args.average else None)
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


def _curves(args) -> int:
    from ccq_eval.report.figures import write_figure
    from ccq_eval.store import Store
    from ccq_eval.views import draw_figure, figure_names

    if args.figure is not None and args.figure not in figure_names():
        raise BadInput(f"--figure {args.figure!r}: unknown; available: {', '.join(figure_names())}")
    names = [args.figure] if args.figure else figure_names()
    out = check_output_folder(Path(args.out), "--out", [f"{n}.{e}" for n in names for e in ("png", "pdf")])
    store = Store(args.store, readonly=True)
    drawn = 0
    for name in names:
        fig = draw_figure(store, name)
        if fig is None:
            if args.figure:
                print(f"figure {name}: nothing in {args.store} to draw yet (skipped)")
            continue
        print("written: " + ", ".join(map(str, write_figure(fig, out, name))))
        drawn += 1
    if not args.figure and not drawn:
        print(f"no figure to draw: {args.store} has no S-NIAH or perplexity results yet")
    return 0


def main(argv: list[str] | None = None) -> int:
    import warnings

    # fla says so on import on every machine without a GPU; there the CPU backend runs its ops, as intended
    warnings.filterwarnings("ignore", message="Triton is not supported on current platform")
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and not argv[0].startswith("-") and argv[0] not in SUBCOMMANDS:
            raise BadInput(f"unknown command {argv[0]!r}; commands: {', '.join(SUBCOMMANDS)} "
                           "(or ccq-eval --model CKPT --suite NAME to run; see ccq-eval --help)")
        if argv and argv[0] == "lm-eval":  # every argument after it is lm-eval's, untouched by our parser
            from ccq_eval.lm.stock_cli import main as lm_eval_main

            return lm_eval_main(argv[1:])
        if argv and argv[0] not in SUBCOMMANDS and argv[0] not in ("-h", "--help"):
            argv = ["run", *argv]  # `ccq-eval --model X --suite Y` is `ccq-eval run ...`
        args = build_parser().parse_args(argv)
        handler = {"run": _run, "runs": _runs, "tables": _tables, "curves": _curves, "data": _data,
                   "ingest": _ingest, "export": _export, "env": _env, "zoo": _zoo, "include-path": _include_path}.get(args.command)
        if handler is None:
            build_parser().print_help()
            return 2
        return handler(args)
    except BadInput as exc:  # every input error of every suite derives from it
        print(f"ccq-eval: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # before a run began (loading, planning): nothing was written
        print("ccq-eval: interrupted before any unit ran; nothing was written", file=sys.stderr)
        return 130
    except StoreWriteFailure as exc:  # mid-run: finished units are kept, the failed write left nothing
        print(f"ccq-eval: error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
