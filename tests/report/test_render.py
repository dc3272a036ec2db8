"""Tables from a store built in the test: layout, latest unit per cell, failed units missing,
confidence intervals, LaTeX (booktabs, bold best, escaping) and Markdown."""


import pytest

from ccq_eval.report.intervals import wilson_interval
from ccq_eval.catalogue import draw_figure, render_table
from ccq_eval.store import Store

HAY = {"name": "ccq-essays", "sha256": "x"}


def _unit(store, run_id, label, task, length, score, n=50, status="complete", finished="2026-01-01T00:00:00"):
    settings = {"haystack": HAY if task != "sniah_1" else None}
    metrics = [] if status == "failed" else [
        {"label": label, "model": label, "metric": "score", "value": score, "stderr": 1.0, "n": n,
         "higher_is_better": True, "is_primary": True}]
    samples = [] if status == "failed" else [
        {"idx": i, "target": "1", "prediction": "1", "score": 100.0 if i < score / 100 * n else 0.0,
         "fields": {"depth": (i * 7) % 100}} for i in range(n)]
    store.writes.write_unit({"run_id": run_id, "suite": "sniah", "task": task, "context_length": length,
                             "unit_key": f"{label}{task}{length}{finished}", "status": status, "started": finished,
                             "finished": finished, "settings": settings, "reason": "boom" if status == "failed" else None},
                            metrics, samples)


def _run(store, label):
    return store.writes.begin_run({"label": label, "model_spec": label, "weights_sha256": "w", "model_config": {},
                                   "ccq_overrides": {}, "dtype": "float32", "device": "cpu", "batch_size": 1,
                                   "seeds": {}, "command_line": "", "versions": {}})


@pytest.fixture
def store(tmp_path):
    store = Store(tmp_path / "ccq.db")
    a, b = _run(store, "GLA"), _run(store, "CCQ_GLA & 50%")
    for task in ("sniah_1", "sniah_2"):
        for length in (1024, 2048):
            _unit(store, a, "GLA", task, length, 40.0)
            _unit(store, b, "CCQ_GLA & 50%", task, length, 90.0, finished="2026-01-01T00:00:00")
    _unit(store, b, "CCQ_GLA & 50%", "sniah_1", 1024, 10.0, finished="2026-02-01T00:00:00")  # a later rerun wins
    _unit(store, a, "GLA", "sniah_2", 4096, 0, status="failed")  # never shown
    return store


def test_layout_latest_unit_and_failed_units(store):
    import csv
    import io

    table = list(csv.reader(io.StringIO(render_table(store, "sniah")["csv"])))
    assert table[0] == ["label", "S1 1K", "S1 2K", "S2 (ccq-essays) 1K", "S2 (ccq-essays) 2K"]
    rows = {row[0]: row[1:] for row in table[1:]}
    assert rows["GLA"] == ["40", "40", "40", "40"]
    assert rows["CCQ_GLA & 50%"] == ["10", "90", "90", "90"]


def test_latex_booktabs_bold_and_escaping(store):
    tex = render_table(store, "sniah")["latex"]
    assert "\\toprule" in tex and "\\midrule" in tex and "\\bottomrule" in tex
    assert "CCQ\\_GLA \\& 50\\%" in tex and "CCQ_GLA & 50%" not in tex
    gla_row = next(line for line in tex.splitlines() if line.startswith("GLA"))
    ccq_row = next(line for line in tex.splitlines() if line.startswith("CCQ"))
    assert gla_row.split("&")[1].strip() == "\\textbf{40.0}"  # S1 1K: 40 beats the rerun's 10
    assert ccq_row.count("\\textbf{90.0}") == 3 and "\\textbf{10.0}" not in ccq_row


def test_markdown_escapes_and_bolds(store):
    md = render_table(store, "sniah")["md"]
    assert "CCQ\\_GLA & 50%" in md and "**90.0**" in md
    assert md.splitlines()[0].startswith("| label")


def test_confidence_intervals(store):
    low, high = wilson_interval(45, 50)
    assert 78 < low < 80 and 95 < high < 97
    assert wilson_interval(50, 50)[1] == pytest.approx(100.0) and wilson_interval(0, 50)[0] == pytest.approx(0.0)
    md = render_table(store, "sniah", ci=True)["md"]
    assert f"90.0 [{wilson_interval(45, 50)[0]:.1f}, {wilson_interval(45, 50)[1]:.1f}]" in md
    csv = render_table(store, "sniah", ci=True)["csv"]
    assert "S1 1K ci_low" in csv.splitlines()[0]


def test_empty_store_renders_nothing(tmp_path):
    store = Store(tmp_path / "empty.db")
    assert render_table(store, "sniah") is None
    assert draw_figure(store, "sniah-depth") is None


def test_depth_heatmap_has_a_panel_per_task_and_label(store):
    fig = draw_figure(store, "sniah-depth")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert sorted(ax.get_title() for ax in panels) == sorted(
        f"{label} · {t}" for label in ("GLA", "CCQ_GLA & 50%") for t in ("S1", "S2"))
    grid = next(ax for ax in panels if ax.get_title() == "GLA · S1").images[0].get_array()
    assert grid.shape == (10, 2) and float(grid.mean()) == pytest.approx(40.0, abs=15)


def test_depth_heatmap_wraps_into_rows_of_five_and_stays_readable(tmp_path):
    """The demo's 15 models x 2 tasks: 30 panels in 6 rows of 5, no wider than 2,500 px at the saved dpi."""
    from ccq_eval.report.figures import write_figure

    store = Store(tmp_path / "ccq.db")
    labels = [f"model-{i:02d}" for i in range(15)]
    for label in labels:
        run = _run(store, label)
        for task in ("sniah_1", "sniah_2"):
            for length in (1024, 2048, 4096, 8192):
                _unit(store, run, label, task, length, 50.0, n=10)
    fig = draw_figure(store, "sniah-depth")
    panels = [ax for ax in fig.axes if ax.get_title()]
    assert len(panels) == 30
    columns = sorted({round(ax.get_position().x0, 3) for ax in panels})
    rows = sorted({round(ax.get_position().y0, 3) for ax in panels})
    assert len(columns) == 5 and len(rows) == 6
    from PIL import Image

    png = write_figure(fig, tmp_path / "f", "sniah-depth")[0]
    width, height = Image.open(png).size
    assert width <= 2500 and height <= 2500, (width, height)


def test_only_a_measured_value_is_bold_however_high_a_reported_row():
    """The caption says "the best measured value of a column in bold": a reported row (the paper's, --reference)
    above every measured one is shown, never bold; the best measured value is."""
    import pandas as pd

    from ccq_eval.report.table import Table, TableOptions, render

    measured = pd.DataFrame({"S1 1K": [40.0, 90.0]}, index=["GLA", "CCQ-GLA"])
    reported = pd.DataFrame({"S1 1K": [99.0]}, index=["GLA [paper] (reported)"])
    table = Table(measured, "S-NIAH; the best measured value of a column in bold", reference=reported)
    grid = render(table, TableOptions(reference=True)).grid
    bold = grid.bold["S1 1K"].to_dict()
    assert bold == {"GLA": False, "CCQ-GLA": True, "GLA [paper] (reported)": False}, bold
    assert grid.kind("GLA [paper] (reported)") == "reported"


def test_csv_cells_a_spreadsheet_would_run_are_made_inert(tmp_path):
    """A label is whatever a user typed: one that starts as a formula (OWASP's = + - @, tab, carriage return) is
    written with a leading ' so a spreadsheet shows it as text; numbers, negative ones included, stay numbers. Read
    back as a spreadsheet reads CSV: no text cell starts as a formula."""
    import csv
    import io

    store = Store(tmp_path / "ccq.db")
    hostile = ["=HYPERLINK(\"http://x\")", "+cmd|' /C calc'!A0", "-2+3", "@SUM(1+1)", "\tpad"]
    for label in hostile:
        _unit(store, _run(store, label), label, "sniah_1", 1024, 40.0)
    base = _run(store, "base")
    _unit(store, base, "base", "sniah_1", 1024, 90.0)  # the other labels' delta rows against it are negative
    for rendered in (render_table(store, "sniah")["csv"], render_table(store, "sniah", baseline="base")["csv"]):
        cells = [cell for row in csv.reader(io.StringIO(rendered)) for cell in row]
        for cell in cells:
            if cell.startswith(("=", "+", "-", "@", "\t", "\r")):
                float(cell)  # only a number may start so
        assert "'=HYPERLINK(\"http://x\")" in cells and "'-2+3" in cells and "'@SUM(1+1)" in cells
    negatives = [c for row in csv.reader(io.StringIO(render_table(store, "sniah", baseline="base")["csv"])) for c in row
                 if c.startswith("-")]
    assert negatives and all(float(c) < 0 for c in negatives)  # the deltas are numbers, written as numbers


def test_every_text_column_is_made_inert_whatever_its_dtype():
    """pandas 3 stores text as its own string dtype, pandas 2 as object: both are text to neutralise."""
    import pandas as pd

    from ccq_eval.report.formats import csv_text

    for dtype in (object, "string"):
        frame = pd.DataFrame({"model": ["=cmd()", "ok"], "delta": [-1.5, 2.0]},
                             index=pd.Index(["@a", "b"], name="label")).astype({"model": dtype})
        rows = csv_text(frame, "%.4g").splitlines()
        assert rows == ["label,model,delta", "'@a,'=cmd(),-1.5", "b,ok,2"], (dtype, rows)
