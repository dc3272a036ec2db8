"""The retrieval suites' sample pages as a reader sees them: a store the suites themselves wrote (the zoo's GLA on
the shipped recall and RULER QA records), opened in headless Chromium. Each sample shows its answer (or the
line asked about) marked inside the frozen prompt, under a label that says what is marked, with no console error."""

from __future__ import annotations

import re

import pytest

from ccq_eval.data import SHIPPED_RECORDS
from ccq_eval.view import write_report
from ccq_eval.store import Store
from tests.browser.driver import chromium, console_errors
from tests.browser.test_report_in_chromium import fragment, open_page

UNITS = {("recall_nq", 1024): "answer in context", ("recall_triviaqa", 1024): "answer in context",
         ("ruler_qa_squad", 4096): "answer in context", ("ruler_vt", 2048): "assignment in context",
         ("ruler_fwe", 2048): "question in context"}


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    from ccq_eval.cli import main

    folder = tmp_path_factory.mktemp("retrieval")
    store = folder / "ccq.db"
    with pytest.MonkeyPatch.context() as patch:  # the report reads the prompts the runs froze: one cache for both
        patch.setenv("CCQ_EVAL_CACHE", str(folder / "cache"))
        common = ["--model", "zoo:gla-tiny", "--samples", "2", "--store", str(store), "--data-dir", str(SHIPPED_RECORDS)]
        assert main([*common, "--suite", "recall", "--tasks", "recall_nq,recall_triviaqa", "--lengths", "1k"]) == 0
        assert main([*common, "--suite", "ruler", "--tasks", "ruler_vt,ruler_fwe", "--lengths", "2k"]) == 0
        # QA at 4K: RULER's ten documents a question outgrow 2K bytes
        assert main([*common, "--suite", "ruler", "--tasks", "ruler_qa_squad", "--lengths", "4k"]) == 0
        report = folder / "report.html"
        write_report(Store(store), report)
    with chromium() as driver:
        yield driver, report.resolve().as_uri(), Store(store)


@pytest.mark.parametrize("task,length", list(UNITS))
def test_each_sample_marks_what_it_asks_inside_its_prompt(page, task, length):
    driver, url, store = page
    unit = open_page(driver, url, fragment("samples", "gla-tiny", task, length))
    rows = unit.find_elements("css selector", "#samples-table tbody tr")
    contexts = unit.find_elements("css selector", "details.context")
    assert len(rows) == len(contexts) == 2
    for row, context in zip(rows, contexts):
        summary = context.find_element("tag name", "summary")
        assert summary.text == UNITS[(task, length)]
        summary.click()
        marked = context.find_element("tag name", "mark").text
        expected = row.find_elements("css selector", "td")[1].text  # the answer / expected column
        if task == "ruler_vt":
            assert re.fullmatch(rf"VAR {re.escape(expected.split(', ')[0])} = \d+", marked)  # the chain's value
        elif UNITS[(task, length)] == "answer in context":
            answers = [a.strip().lower() for a in expected.split(",")]
            assert marked.lower() in answers
        else:
            assert marked.startswith("Question: ")
    assert console_errors(driver) == []


def test_the_tables_show_both_suites(page):
    driver, url, _ = page
    tables = open_page(driver, url, "#tables")
    shown = {t.get_attribute("data-table") for t in tables.find_elements("css selector", "table[data-table]")}
    assert {"ruler", "recall"} <= shown
    recall = tables.find_element("css selector", 'table[data-table="recall"] tr[data-label="gla-tiny"]')
    assert {c.get_attribute("data-column") for c in recall.find_elements("tag name", "td")} >= {"NQ", "TQA"}
