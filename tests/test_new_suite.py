"""Adding a suite is one folder and one registry line: a copy of the package gains suites/toy/ (a suite with
a typed flag of its own, a driver that reads the model, a table, a figure) and the line "toy" in the registry,
nothing else, and the CLI runs it on a real checkpoint, stores its units, lists it, its table and its figure
in --help, and renders the table and the figure."""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.helpers import save_checkpoint, tiny_model

REPO = Path(__file__).resolve().parent.parent

TOY_SUITE = '''"""A throwaway suite: the mean NLL of a fixed text's first L tokens, scaled by its own flag."""

from ccq_eval.suites.base import Suite, SuiteOption


class ToySuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.toy.driver import ToyDriver

        return ToyDriver(inputs)


SUITE = ToySuite(name="toy", tasks=("toy_a", "toy_b"), default_lengths=(32, 64), default_samples=1,
                 display={"toy_a": "A", "toy_b": "B"},
                 options=(SuiteOption("toy-scale", "multiplies the score", kind=float, default=1.0),),
                 length_means="the text's first L tokens")
'''

TOY_DRIVER = '''import torch

from ccq_eval.suites.driver import Driver
from ccq_eval.suites.outcomes import Metric, UnitOutcome

TEXT = "the quick brown fox jumps over the lazy dog " * 8


class ToyDriver(Driver):
    def unit_settings(self, task, length, model):
        return {"scale": self.inputs.options["toy-scale"]}, {"text": TEXT, "task": task}

    def evaluate(self, unit, model):
        ids = torch.tensor([model.tokenizer(TEXT)["input_ids"][: unit.context_length]])
        with torch.no_grad():
            nll = float(torch.nn.functional.cross_entropy(model.model(ids).logits[0, :-1], ids[0, 1:]))
        scale = self.inputs.options["toy-scale"] * (2 if unit.task == "toy_b" else 1)
        return UnitOutcome("complete", metrics=[Metric("score", nll * scale, is_primary=True)])
'''

TOY_TABLES = '''from ccq_eval.report.entries import table
from ccq_eval.report.table import Table
from ccq_eval.suites.toy import SUITE as suite


@table("toy-nll")
def toy_table(results, options):
    frame = results.metrics
    rows = frame[frame.suite == "toy"] if not frame.empty else frame
    if rows.empty:
        return Table(values=rows, caption="toy")
    rows = rows.assign(column=[f"{suite.display[t]} {L}" for t, L in zip(rows.task, rows.context_length)])
    return Table(values=rows.pivot(index="label", columns="column", values="value"), caption="toy NLL", digits=4,
                 higher_is_better=lambda column: False)
'''


TOY_FIGURES = '''from ccq_eval.report.entries import figure
from ccq_eval.report.figures import pyplot


@figure("toy-curve")
def toy_figure(results):
    rows = results.metrics
    rows = rows[rows.suite == "toy"] if not rows.empty else rows
    if rows.empty:
        return None
    fig, ax = pyplot().subplots()
    ax.plot(rows.context_length, rows.value, "o")
    return fig
'''


def add_toy_suite(package: Path) -> None:
    folder = package / "suites" / "toy"
    folder.mkdir()
    (folder / "__init__.py").write_text(TOY_SUITE)
    (folder / "driver.py").write_text(TOY_DRIVER)
    (folder / "tables.py").write_text(TOY_TABLES)
    (folder / "figures.py").write_text(TOY_FIGURES)
    registry = package / "suites" / "__init__.py"
    lines = registry.read_text().splitlines(keepends=True)
    at = lines.index('    "longbench",\n') + 1  # the one line
    registry.write_text("".join(lines[:at] + ['    "toy",\n'] + lines[at:]))


@pytest.mark.e2e
def test_a_new_suite_is_one_folder_and_one_registry_line(tmp_path):
    root = tmp_path / "site"
    package = root / "ccq_eval"
    shutil.copytree(REPO / "ccq_eval", package, ignore=shutil.ignore_patterns("__pycache__", "zoo"))
    shutil.copytree(REPO / "tasks", package / "tasks", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(REPO / "results" / "reference", package / "reference")
    before = {p.relative_to(package) for p in package.rglob("*") if p.is_file()}
    add_toy_suite(package)
    added = {p.relative_to(package) for p in package.rglob("*") if p.is_file()} - before
    assert added == {Path("suites/toy") / n for n in ("__init__.py", "driver.py", "tables.py", "figures.py")}

    torch.manual_seed(0)
    model = save_checkpoint(tiny_model("gla"), tmp_path / "m")
    env = {**os.environ, "PYTHONPATH": str(root), "CCQ_EVAL_CACHE": str(tmp_path / "cache")}
    store, out = tmp_path / "s.db", tmp_path / "tables"

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "ccq_eval", *args], env=env, capture_output=True, text=True,
                              cwd=tmp_path, timeout=300)

    shown = cli("run", "--help")
    text = " ".join(shown.stdout.split())  # argparse wraps at the terminal's width
    assert shown.returncode == 0 and "--toy-scale TOY-SCALE toy: multiplies the score" in text
    assert "suite to run: lm, sniah, multi_niah, ruler, recall, babilong, longppl, longbench, toy, efficiency, or all" in text
    assert "toy: the text's first L tokens (default 32,64)" in text  # its lengths' meaning, from its entry
    for command, listed in (("tables", "toy-nll"), ("curves", "toy-curve")):  # its table and figure, named
        shown = cli(command, "--help")
        assert shown.returncode == 0 and f"{listed}," in " ".join(shown.stdout.split()), command
    ran = cli("--model", str(model), "--suite", "toy", "--toy-scale", "3", "--store", str(store), "--device", "cpu")
    assert ran.returncode == 0, ran.stderr[-2000:]
    rows = sqlite3.connect(store).execute(
        "SELECT u.task, u.context_length, m.value FROM units u JOIN metrics m ON m.unit_id = u.id "
        "WHERE u.status = 'complete' ORDER BY u.task, u.context_length").fetchall()
    assert [(t, L) for t, L, _ in rows] == [("toy_a", 32), ("toy_a", 64), ("toy_b", 32), ("toy_b", 64)]
    values = {(t, L): v for t, L, v in rows}
    assert values[("toy_b", 32)] == pytest.approx(2 * values[("toy_a", 32)]) and values[("toy_a", 32)] > 3
    rerun = cli("--model", str(model), "--suite", "toy", "--toy-scale", "3", "--store", str(store), "--device", "cpu")
    assert rerun.returncode == 0 and "all 4 units already complete" in rerun.stdout
    table = cli("tables", "--table", "toy-nll", "--store", str(store), "--out", str(out))
    assert table.returncode == 0, table.stderr[-2000:]
    md = (out / "toy-nll.md").read_text()
    assert "A 32" in md and "B 64" in md and f"{values[('toy_a', 64)]:.4f}" in md
    assert sorted(p.name for p in out.iterdir()) == ["toy-nll.csv", "toy-nll.md", "toy-nll.tex"]
    figures = tmp_path / "figures"
    drawn = cli("curves", "--figure", "toy-curve", "--store", str(store), "--out", str(figures))
    assert drawn.returncode == 0 and sorted(p.name for p in figures.iterdir()) == ["toy-curve.pdf", "toy-curve.png"]


ECHO_SUITE = '''"""A throwaway generating suite: the model continues a short text; scored by whether the text's next word follows."""

from ccq_eval.suites.base import Suite


class EchoSuite(Suite):
    def driver(self, inputs):
        from ccq_eval.suites.echo.driver import EchoDriver

        return EchoDriver(inputs)


SUITE = EchoSuite(name="echo", tasks=("echo_fox",), default_lengths=(256,), default_samples=3)
'''

ECHO_DRIVER = '''from ccq_eval.suites.driver import Driver, Generated, UnitData
from ccq_eval.suites.generating import Ask, generate_answers
from ccq_eval.suites.outcomes import Sample, UnitOutcome, mean_metric

TEXT = "the quick brown fox jumps over the lazy dog "


class EchoDriver(Driver):
    def data(self, unit, tokenizer):
        return UnitData([{"index": i, "prompt": TEXT * (i + 1), "answer": "the"} for i in range(self.inputs.samples)],
                        None)

    def generate(self, unit, data, model):
        answers = generate_answers(model, [Ask(r["index"], r["prompt"], 8, until=("\\n",)) for r in data.records],
                                   unit.context_length)
        return None if answers is None else Generated({i: {"prediction": a.text} for i, a in answers.items()})

    def score(self, unit, data, generated):
        samples = [Sample(r["index"], 100.0 * (r["answer"] in generated.outputs[r["index"]]["prediction"]),
                          target=r["answer"], prediction=generated.outputs[r["index"]]["prediction"])
                   for r in data.records]
        return UnitOutcome("complete", metrics=[mean_metric("score", [s.score for s in samples], is_primary=True)],
                           samples=samples)
'''


@pytest.mark.e2e
def test_a_new_generating_suite_is_one_folder_and_one_registry_line_without_tasks(tmp_path):
    """A suite whose driver generates (data, generate through suites/generating.py, score): its folder and its line,
    no tasks/ plugin, and `ccq-eval run` stores each sample's prediction from the model's engine."""
    root = tmp_path / "site"
    package = root / "ccq_eval"
    shutil.copytree(REPO / "ccq_eval", package, ignore=shutil.ignore_patterns("__pycache__", "zoo"))
    shutil.copytree(REPO / "results" / "reference", package / "reference")
    (package / "suites" / "echo").mkdir()
    (package / "suites" / "echo" / "__init__.py").write_text(ECHO_SUITE)
    (package / "suites" / "echo" / "driver.py").write_text(ECHO_DRIVER)
    registry = package / "suites" / "__init__.py"
    lines = registry.read_text().splitlines(keepends=True)
    at = lines.index('    "longbench",\n') + 1
    registry.write_text("".join(lines[:at] + ['    "echo",\n'] + lines[at:]))
    assert not (package / "tasks").exists()

    torch.manual_seed(0)
    model = save_checkpoint(tiny_model("gla"), tmp_path / "m")
    env = {**os.environ, "PYTHONPATH": str(root), "CCQ_EVAL_CACHE": str(tmp_path / "cache")}
    store = tmp_path / "s.db"
    ran = subprocess.run([sys.executable, "-m", "ccq_eval", "--model", str(model), "--suite", "echo", "--store",
                          str(store), "--device", "cpu"], env=env, capture_output=True, text=True, cwd=tmp_path,
                         timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    rows = sqlite3.connect(store).execute("SELECT u.task, u.status, s.idx, s.prediction FROM samples s JOIN units u "
                                          "ON u.id = s.unit_id ORDER BY s.idx").fetchall()
    assert [(t, status, i) for t, status, i, _ in rows] == [("echo_fox", "complete", i) for i in range(3)]
    assert all(isinstance(p, str) and "\n" not in p for *_, p in rows)  # cut at the stop string
    assert any(p for *_, p in rows)  # the tiny model said something (8 tokens a prompt, nothing stops it sooner)
