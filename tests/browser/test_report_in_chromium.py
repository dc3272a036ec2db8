"""The report as a reader sees it: opened from file:// in headless Chromium, with no console error and no
request leaving the file; every page by its fragment; numbers equal to the store's and the CSV's; a hostile
prediction shown as text with no element made from it; a screenshot written."""

from __future__ import annotations

import csv
import io
import time
from urllib.parse import quote

import pytest

from ccq_eval.catalogue import render_table
from ccq_eval.view import write_report
from tests.browser.driver import chromium, console_errors, requested_urls
from tests.report_store import HOSTILE, build_store


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    folder = tmp_path_factory.mktemp("browser")
    store = build_store(folder / "ccq.db", labels=("ORG/gla", "ccq-ORG/gla"))  # a hub label holds a slash
    report = folder / "report.html"
    write_report(store, report)
    with chromium() as driver:
        driver.get("about:blank")
        requested_urls(driver), driver.get_log("browser")  # the browser's own start-up, not the page's
        yield driver, report.resolve().as_uri(), store, folder


def open_page(driver, url: str, fragment: str):
    driver.get(url + fragment)
    deadline = time.time() + 10
    while time.time() < deadline:
        shown = driver.execute_script("const s = [...document.querySelectorAll('section.page')].find(s => !s.hidden);"
                                      "return s ? s.id : null")
        if shown:
            return driver.find_element("id", shown)
        time.sleep(0.05)
    raise AssertionError(f"no page shown for {fragment}")


def fragment(*parts) -> str:
    return "#" + "/".join(quote(str(p), safe="") for p in parts)


def test_opens_from_disk_with_no_error_and_no_request(page):
    driver, url, _, _ = page
    for frag in ("#runs", "#tables", "#figures", "#samples", fragment("compare", "ccq-ORG/gla", "ORG/gla")):
        open_page(driver, url, frag)
    assert console_errors(driver) == []
    left = [u for u in requested_urls(driver) if not (u.startswith(url) or u.startswith("data:"))]
    assert left == []


def test_every_fragment_opens_its_page(page):
    driver, url, _, _ = page
    assert open_page(driver, url, "#runs").find_element("id", "runs-table").text.count("ORG/gla") >= 2
    assert "prompt would be cut" in open_page(driver, url, "#runs").find_element("id", "failed-table").text
    tables = open_page(driver, url, "#tables")
    assert {t.get_attribute("data-table") for t in tables.find_elements("css selector", "table[data-table]")} >= {
        "sniah", "longppl", "longbench", "lm", "pairs"}
    figures = open_page(driver, url, "#figures")
    assert {f.get_attribute("data-figure") for f in figures.find_elements("css selector", "figure")} == {
        "sniah-depth", "longppl"}
    assert all(f.size["width"] > 300 for f in figures.find_elements("css selector", "figure svg"))
    unit = open_page(driver, url, fragment("samples", "ORG/gla", "sniah_2", 2048))
    assert unit.find_element("tag name", "h2").text == "ORG/gla · S2 · 2K"
    as_tables_write_it = open_page(driver, url, fragment("samples", "ORG/gla", "sniah_2", "2K"))
    assert as_tables_write_it.find_element("tag name", "h2").text == "ORG/gla · S2 · 2K"
    assert open_page(driver, url, "#nowhere").get_attribute("id") == "page-missing"


def test_a_table_cell_equals_the_csv(page):
    driver, url, store, _ = page
    rows = {r["label"]: r for r in csv.DictReader(io.StringIO(render_table(store, "sniah")["csv"]))}
    tables = open_page(driver, url, "#tables")
    cell = tables.find_element("css selector", 'table[data-table="sniah"] tr[data-label="ORG/gla"] td[data-column="S1 1K"]')
    assert float(cell.text.split()[0]) == pytest.approx(float(rows["ORG/gla"]["S1 1K"]), abs=0.05)


def _samples_in_store(store, label, task, length):
    run = next(r for r in store.reads.runs() if r.label == label)
    unit = next(u for u in store.reads.units(run.id, "complete") if (u.task, u.context_length) == (task, length))
    return store.reads.samples(unit.id)


def test_filters_show_the_count_the_store_gives(page):
    driver, url, store, _ = page
    samples = _samples_in_store(store, "ORG/gla", "sniah_1", 1024)
    unit = open_page(driver, url, fragment("samples", "ORG/gla", "sniah_1", 1024))
    count = unit.find_element("id", "sample-count")
    assert count.get_attribute("data-count") == str(len(samples))
    from selenium.webdriver.support.ui import Select

    Select(unit.find_element("id", "filter-correct")).select_by_value("wrong")
    assert count.get_attribute("data-count") == str(sum(s.score == 0 for s in samples))
    Select(unit.find_element("id", "filter-correct")).select_by_value("all")
    Select(unit.find_element("id", "filter-depth")).select_by_value("3")
    assert count.get_attribute("data-count") == str(sum(30 <= s.fields["depth_used"] < 40 for s in samples))
    Select(unit.find_element("id", "filter-depth")).select_by_value("")
    unit.find_element("id", "filter-search").send_keys("key-7")
    assert count.get_attribute("data-count") == str(sum("key-7" in s.fields["key"] for s in samples))


def test_the_compare_page_counts_equal_the_stores(page):
    driver, url, store, _ = page
    counted = {}
    compare = open_page(driver, url, fragment("compare", "ccq-ORG/gla", "ORG/gla"))
    for task in ("sniah_1", "sniah_2"):
        for length in (1024, 2048):
            a = {s.prompt_sha256: s.score for s in _samples_in_store(store, "ccq-ORG/gla", task, length)}
            b = {s.prompt_sha256: s.score for s in _samples_in_store(store, "ORG/gla", task, length)}
            column = f"S{task[-1]} {length // 1024}K acc"
            counts = compare.find_element("css selector", f'p.counts[data-column="{column}"]')
            shared = a.keys() & b.keys()
            counted[column] = (sum(a[h] > b[h] for h in shared), sum(a[h] < b[h] for h in shared))
            shown = tuple(int(counts.find_element("css selector", f'[data-count="{k}"]').text) for k in ("better", "worse"))
            assert shown == counted[column]
            assert "ccq-ORG/gla right, ORG/gla wrong" in counts.text and "McNemar p" in counts.text
            assert len(compare.find_elements("css selector", "table.discordant")) >= 1
    flipped = open_page(driver, url, fragment("compare", "ORG/gla", "ccq-ORG/gla"))  # B against A: the counts swap
    for column, (better, worse) in counted.items():
        counts = flipped.find_element("css selector", f'p.counts[data-column="{column}"]')
        assert int(counts.find_element("css selector", '[data-count="better"]').text) == worse
        assert int(counts.find_element("css selector", '[data-count="worse"]').text) == better


def test_a_hostile_prediction_is_text_and_makes_no_element(page):
    driver, url, _, _ = page
    unit = open_page(driver, url, fragment("samples", "ORG/gla", "sniah_1", 1024))
    shown = [td.text for td in unit.find_elements("css selector", "#samples-table td.text")]
    assert any(text.startswith("</script><img src=x") for text in shown)
    assert driver.execute_script("return [window.pwned === undefined, document.querySelectorAll('img, b').length]") == [
        True, 0]
    assert HOSTILE.split("\u2028")[0] in driver.execute_script(
        "return document.getElementById('samples-table').textContent")


def test_a_screenshot_is_written(page):
    driver, url, _, folder = page
    open_page(driver, url, fragment("compare", "ccq-ORG/gla", "ORG/gla"))
    shot = folder / "compare.png"
    driver.save_screenshot(str(shot))
    from PIL import Image

    image = Image.open(shot).convert("L")
    assert image.size[0] >= 1000 and len(image.getcolors(1 << 16) or ()) > 20  # a page drawn, not a blank one
