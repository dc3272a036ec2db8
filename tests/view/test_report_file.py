"""The report file without a browser: one self-contained file whose policy forbids every fetch, stored text only
inside its escaped JSON, the numbers it carries equal to the store's, refusals in one line, atomic writes."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import sqlite3
from html.parser import HTMLParser

import pytest

from ccq_eval.view import write_report
from ccq_eval.view.page import embedded_json
from ccq_eval.store import Store
from tests.report_store import HOSTILE, build_store

class Elements(HTMLParser):
    """Every start tag with its attributes, and the text of each script block."""

    def __init__(self):
        super().__init__()
        self.tags, self.scripts, self._in_script = [], [], None

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._in_script = dict(attrs)
            self.scripts.append([dict(attrs), ""])

    def handle_endtag(self, tag):
        if tag == "script":
            self._in_script = None

    def handle_data(self, data):
        if self._in_script is not None:
            self.scripts[-1][1] += data


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("report")
    store = build_store(folder / "ccq.db")
    out = folder / "report.html"
    write_report(store, out)
    parsed = Elements()
    parsed.feed(out.read_text(encoding="utf-8"))
    data = json.loads(next(text for attrs, text in parsed.scripts if attrs.get("type") == "application/json"))
    return store, out, parsed, data


def test_embedded_json_can_not_close_its_block_and_reads_back_the_same():
    hostile = {"p": HOSTILE + "<!-- \ud800", "q": ["&lt;", "\u2029"]}
    text = embedded_json(hostile)
    assert not re.search("[<>&\u2028\u2029\ud800]", text)
    back = json.loads(text)
    assert back["q"] == hostile["q"] and back["p"] == (HOSTILE + "<!-- \ufffd")


def test_policy_forbids_every_fetch_and_only_the_page_script_runs(report):
    _, out, parsed, _ = report
    policies = [a["content"] for tag, a in parsed.tags if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert len(policies) == 1 and policies[0].startswith("default-src 'none';")
    assert "img-src data:" in policies[0] and "connect-src" not in policies[0]
    code = [text for attrs, text in parsed.scripts if "type" not in attrs]
    assert len(code) == 1
    digest = base64.b64encode(hashlib.sha256(code[0].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policies[0]
    for tag, attrs in parsed.tags:  # nothing the page would load: links inside the page, images from data:
        for name in ("src", "href"):
            if name in attrs:
                assert attrs[name].startswith(("#", "data:")), (tag, attrs)


def test_stored_text_is_only_inside_the_json_block(report):
    _, out, parsed, data = report
    html = out.read_text(encoding="utf-8")
    assert "onerror" not in "".join(text for attrs, text in parsed.scripts if "type" not in attrs)
    assert not any(tag == "img" or "onerror" in attrs for tag, attrs in parsed.tags)
    assert HOSTILE not in html and "<b>bold</b>" not in html
    predictions = [row[2] for unit in data["units"] if unit["suite"] == "sniah" for row in unit["rows"]]
    assert HOSTILE in predictions  # carried byte for byte, as data


def test_the_pages_numbers_are_the_stores(report):
    store, _, _, data = report
    from ccq_eval.catalogue import render_table

    page_units = {(u["label"], u["task"], u["length"]): u for u in data["units"]}
    for run in store.reads.runs():
        for unit in store.reads.units(run.id, "complete"):
            page = page_units[(run.label, unit.task, unit.context_length)]
            assert [row[0] for row in page.get("rows", [])] == [s.idx for s in store.reads.samples(unit.id)]
            assert page["metrics"][0][1] == store.reads.metrics(unit.id)[0].value
    failed = {(f["label"], f["task"]) for f in data["failed"]}
    assert failed == {(r.label, "sniah_3") for r in store.reads.runs()}
    sniah = next(t for t in data["tables"] if t["name"] == "sniah")
    md = render_table(store, "sniah", ci=True, reference=True, strict=False)["md"]
    for row in sniah["rows"]:
        for cell in row["cells"]:
            assert cell in md  # the same text the Markdown table shows


def test_compare_counts_equal_those_counted_from_the_samples(report):
    store, _, _, data = report
    import csv
    import io

    from ccq_eval.catalogue import render_table

    by_label = {}
    for run in store.reads.runs():
        for unit in store.reads.units(run.id, "complete"):
            by_label[(run.label, unit.task, unit.context_length)] = {s.prompt_sha256: s.score for s in store.reads.samples(unit.id)}
    pairs_csv = list(csv.DictReader(io.StringIO(render_table(store, "pairs")["csv"])))
    entry = next(e for e in data["compare"] if {e["a"], e["b"]} == {"ccq-gla", "gla"})
    checked = 0
    for cell in entry["cells"]:
        a, b = by_label[(entry["a"], cell["task"], cell["length"])], by_label[(entry["b"], cell["task"], cell["length"])]
        shared = a.keys() & b.keys()
        if cell["kind"] == "score":
            assert cell["better"] == sum(a[h] > b[h] for h in shared)
            assert cell["worse"] == sum(a[h] < b[h] for h in shared)
            assert len(cell["discordant"]) == sum(a[h] != b[h] for h in shared)
            checked += 1
        else:
            assert len(cell["docs"]) == len(shared)
        row = next(r for r in pairs_csv if r["column"] == cell["column"])  # the pairs table: ccq-gla − gla
        sign = 1 if (row["model"], row["baseline"]) == (entry["a"], entry["b"]) else -1
        assert cell["delta"] == pytest.approx(sign * float(row["delta"]))
        assert cell["p"] == pytest.approx(float(row["p_value"]))
    assert checked == 4


def test_labels_narrow_every_page_and_leave_the_store_alone(tmp_path):
    store = build_store(tmp_path / "ccq.db", labels=("gla", "ccq-gla", "other"))
    before = (tmp_path / "ccq.db").read_bytes()
    write_report(store, tmp_path / "r.html", labels=["gla", "other"])
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', (tmp_path / "r.html").read_text(), re.S).group(1))
    assert {r["label"] for r in data["runs"]} == {"gla", "other"}
    assert {u["label"] for u in data["units"]} == {"gla", "other"}
    assert all(e["a"] != "ccq-gla" and e["b"] != "ccq-gla" for e in data["compare"])
    assert len(Store(tmp_path / "ccq.db", readonly=True).reads.runs()) == 3
    assert (tmp_path / "ccq.db").read_bytes() == before


def _view(capsys, *args):
    """`ccq-eval view ARGS` in process (the CLI's own main): (exit code, stdout, stderr)."""
    from ccq_eval.cli import main

    capsys.readouterr()
    code = main(["view", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_inputs_are_one_line_and_write_nothing(tmp_path, capsys):
    not_a_store = tmp_path / "notes.db"
    not_a_store.write_text("hello")
    newer = tmp_path / "newer.db"
    Store(newer).close()
    with sqlite3.connect(newer) as db:
        db.execute("PRAGMA user_version = 99")
    good = tmp_path / "good.db"
    build_store(good, labels=("gla",), sniah_tasks=("sniah_1",), lengths=(1024,), samples=3, longbench_tasks=(),
                longppl_corpora=(), lm_tasks=())
    (tmp_path / "file").write_text("x")
    cases = [(["--store", str(not_a_store)], "not a readable ccq-eval store"),
             (["--store", str(newer)], "newer"),
             (["--store", str(tmp_path / "missing.db")], "no such file"),
             (["--store", str(good), "--out", str(tmp_path)], "is a folder"),
             (["--store", str(good), "--out", str(tmp_path / "file" / "r.html")], "is a file, so nothing can be written"),
             (["--store", str(good), "--labels", "gla,nope"], "'nope': not in")]
    for args, said in cases:
        code, _, err = _view(capsys, *args, *([] if "--out" in args else ["--out", str(tmp_path / "out.html")]))
        lines = err.strip().splitlines()
        assert code == 2 and len(lines) == 1 and said in lines[0], (args, err)
    assert not (tmp_path / "out.html").exists()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == [
        "file", "good.db", "newer.db", "notes.db"]


def test_the_default_report_sits_beside_the_store_and_an_empty_store_says_so(tmp_path, capsys):
    Store(tmp_path / "ccq.db").close()
    code, out, err = _view(capsys, "--store", str(tmp_path / "ccq.db"))
    assert code == 0, err
    assert f"written: {tmp_path / 'report.html'}" in out
    html = (tmp_path / "report.html").read_text()
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
    assert data["runs"] == [] and data["units"] == [] and "No figure" in html


def test_a_failed_write_leaves_no_report_and_no_temporary_file(tmp_path, monkeypatch):
    store = build_store(tmp_path / "ccq.db", labels=("gla",), samples=3)
    out = tmp_path / "report.html"
    out.write_text("the previous report")
    import ccq_eval.view.page as page

    def broken(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(page, "embedded_json", broken)
    with pytest.raises(RuntimeError):
        write_report(store, out)
    assert out.read_text() == "the previous report"
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith("ccq.db")) == ["report.html"]


def test_the_needle_is_shown_in_context_from_the_frozen_prompts(tmp_path, monkeypatch):
    monkeypatch.setenv("CCQ_EVAL_CACHE", str(tmp_path / "cache"))
    store = build_store(tmp_path / "ccq.db", labels=("gla",), samples=6, longbench_tasks=(), longppl_corpora=(),
                        lm_tasks=(), frozen=True)
    for whole in (False, True):
        write_report(store, tmp_path / "r.html", whole_prompts=whole)
        html = (tmp_path / "r.html").read_text()
        data = json.loads(re.search(r'id="report-data">(.*?)</script>', html, re.S).group(1))
        unit = next(u for u in data["units"] if (u["task"], u["length"]) == ("sniah_1", 2048))
        for row, context in zip(unit["rows"], unit["context"]):
            assert context["needle"] == f"One of the special magic numbers for {row[5]} is: {row[1]}."
            assert len(context["before"]) <= 300 and len(context["after"]) <= 300
            assert len(context["before"]) + len(context["after"]) >= 300  # haystack around it, on either side
            assert ("prompt" in context) == whole
        if not whole:
            small = len(html)
    assert len(html) > small + 6 * 4 * 2048 * 3  # whole prompts only when asked for
    cache = next((tmp_path / "cache" / "sniah").glob("sniah_1-L2048*.jsonl"))
    cache.write_text(cache.read_text().replace("green", "GREEN"))  # edited since the run: no context is shown
    write_report(store, tmp_path / "r.html")
    data = json.loads(re.search(r'id="report-data">(.*?)</script>', (tmp_path / "r.html").read_text(), re.S).group(1))
    assert "context" not in next(u for u in data["units"] if (u["task"], u["length"]) == ("sniah_1", 2048))


def test_series_pair_each_ccq_model_with_its_backbone_and_band_the_seeds():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from ccq_eval.report.series import BACKBONE, TRAINED_CCQ, TRAINING_FREE_CCQ, plot_series, series_of

    labels = ["gla", "gla-s1", "gla-s2", "ccq-gla", "gla+ccq0.3", "mamba"]
    series = {s.name: s for s in series_of(labels)}
    assert series["gla"].labels == ("gla", "gla-s1", "gla-s2") and series["gla"].role == BACKBONE
    assert (series["ccq-gla"].role, series["gla+ccq0.3"].role) == (TRAINED_CCQ, TRAINING_FREE_CCQ)
    assert series["gla"].colour == series["ccq-gla"].colour != series["mamba"].colour
    assert (series["gla"].linestyle, series["ccq-gla"].linestyle) == ("--", "-")
    lines = {"gla": ([1, 2], [10.0, 20.0]), "gla-s1": ([1, 2], [12.0, 18.0]), "gla-s2": ([1, 2], [14.0, 25.0])}
    fig, ax = plt.subplots()
    plot_series(ax, series["gla"], lines, "gla")
    (line,) = ax.get_lines()
    assert list(line.get_ydata()) == [12.0, 21.0]  # the mean over seeds
    band = ax.collections[0].get_paths()[0].vertices
    assert np.isclose(band[:, 1].min(), 10.0) and np.isclose(band[:, 1].max(), 25.0)  # lowest to highest seed
    plt.close(fig)


def test_a_figure_that_could_act_is_refused():
    from ccq_eval.view.figures import UnsafeFigure, check_inert

    ns = 'xmlns="http://www.w3.org/2000/svg" xmlns:xlink="http://www.w3.org/1999/xlink"'
    check_inert(f'<svg {ns}><g><path d="M0 0"/><use xlink:href="#m1"/><image xlink:href="data:image/png;base64,AA"/></g></svg>')
    for bad in ("<script>alert(1)</script>", '<g onload="x()"/>', '<image xlink:href="http://example.com/x.png"/>',
                "<foreignObject><div/></foreignObject>"):
        with pytest.raises(UnsafeFigure):
            check_inert(f"<svg {ns}>{bad}</svg>")


def test_a_hostile_label_in_a_figure_is_text(tmp_path):
    import xml.etree.ElementTree as ET

    from ccq_eval.view.figures import figure_svg

    label = '<script>alert(1)</script>-->'
    store = build_store(tmp_path / "ccq.db", labels=(label,), samples=4, longbench_tasks=(), lm_tasks=(),
                        hostile=False, failed=False)
    svg = figure_svg(store, "longppl")
    root = ET.fromstring(svg)
    assert not [e for e in root.iter() if e.tag.endswith("script")]
    assert any(label in "".join(e.itertext()) for e in root.iter())
