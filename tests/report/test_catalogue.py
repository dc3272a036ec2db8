"""Adding a table or a figure is one function and one decorator: a module written into the catalogue's folder with
``@table`` / ``@figure`` over a function of the results snapshot shows in `tables --help` / `curves --help`, in
`--table all`, and renders to every format, with no other line anywhere. And the snapshot reads the store once."""

import importlib
import sys
import textwrap

import pytest

from ccq_eval.cli import main
from ccq_eval import catalogue
from ccq_eval.report import entries

NEW_TABLE = '''
from ccq_eval.report.entries import figure, table
from ccq_eval.report.table import Table


@table("mean-score", about="every label's mean primary score")
def mean_score(results, options):
    rows = results.metrics[results.metrics.is_primary == 1] if not results.metrics.empty else results.metrics
    return Table(values=rows.groupby("label")[["value"]].mean().rename(columns={"value": "mean"}), caption="Mean")


@figure("score-histogram")
def score_histogram(results):
    from ccq_eval.report.figures import pyplot

    if results.metrics.empty:
        return None
    fig, ax = pyplot().subplots()
    ax.hist(results.metrics.value)
    return fig
'''


@pytest.fixture
def report_store(tmp_path):
    from tests.report_store import build_store

    build_store(tmp_path / "ccq.db", sniah_tasks=("sniah_1",), lengths=(1024,)).close()
    return tmp_path / "ccq.db"


@pytest.fixture
def new_module(tmp_path, monkeypatch):
    folder = tmp_path / "more"
    folder.mkdir()
    (folder / "mean_score.py").write_text(textwrap.dedent(NEW_TABLE))
    monkeypatch.setattr(catalogue, "__path__", [*catalogue.__path__, str(folder)])
    yield
    for name in ("mean-score", "score-histogram"):
        entries.TABLES.pop(name, None)
        entries.FIGURES.pop(name, None)
    sys.modules.pop("ccq_eval.catalogue.mean_score", None)


def test_a_table_and_a_figure_are_one_function_and_one_decorator_each(new_module, report_store, tmp_path, capsys,
                                                                     monkeypatch):
    monkeypatch.setenv("COLUMNS", "1000")  # argparse wraps at the terminal's width, hyphens included
    assert catalogue.table_names()[-1] == "mean-score" and "score-histogram" in catalogue.figure_names()
    with pytest.raises(SystemExit):
        main(["tables", "--help"])
    assert "mean-score (every label's mean primary score), all (default)" in " ".join(capsys.readouterr().out.split())
    out = tmp_path / "tables"
    assert main(["tables", "--store", str(report_store), "--out", str(out)]) == 0
    md = (out / "mean-score.md").read_text()
    assert "| mean" in md and "| ccq-gla " in md
    assert main(["curves", "--figure", "score-histogram", "--store", str(report_store), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "score-histogram.png").stat().st_size > 1000


def test_a_name_registered_twice_by_two_functions_is_refused():
    @entries.table("twice-probe")
    def first(results, options):
        return None

    try:
        with pytest.raises(ValueError, match="'twice-probe' is registered twice"):
            @entries.table("twice-probe")
            def second(results, options):
                return None
    finally:
        entries.TABLES.pop("twice-probe")


def test_the_snapshot_reads_each_part_of_the_store_once(report_store, monkeypatch):
    """Every table, figure and report page from one snapshot: the runs, units and metrics are read once, each
    suite's samples once."""
    from ccq_eval.view.content import figure_entries, report_content

    from ccq_eval.report.results import Results
    from ccq_eval.store import Store

    store = Store(report_store, readonly=True)
    calls = []
    for read in ("metrics_frame", "metrics", "runs", "units", "samples_frame"):
        original = getattr(store.reads, read)
        monkeypatch.setattr(store.reads, read, lambda *a, _o=original, _n=read, **k: calls.append((_n, a)) or _o(*a, **k))
    results = Results(store)
    shown = [name for name in catalogue.table_names() if catalogue.table_grid(results, name, ci=True, baseline="gla",
                                                                                       strict=False)]
    assert {"sniah", "pairs", "longppl"} <= set(shown)
    content = report_content(results)
    assert figure_entries(results) and content["units"] and content["failed"] and content["tables"]
    for read in ("metrics_frame", "metrics", "runs", "units"):
        assert [c for c in calls if c[0] == read] == [(read, ())], read
    samples = [c for c in calls if c[0] == "samples_frame"]
    assert samples and len(samples) == len(set(samples))
