"""The report's pages are named once (view/page.py's PAGES): the navigation and the sections come from that list, and
the script draws only pages it finds there (the address of a page it does not hold shows the missing page, in
Chromium: tests/browser/)."""

from __future__ import annotations

import re

from ccq_eval.view.page import PAGES, page


def test_the_navigation_and_the_sections_come_from_one_list():
    html = page({"runs": []}, [])
    names = [name for name, _ in PAGES]
    assert re.findall(r'<nav>(.*?)</nav>', html)[0] == "".join(f'<a href="#{n}">{t}</a>' for n, t in PAGES)
    assert re.findall(r'<section id="page-([\w-]+)" class="page" data-page="([\w-]+)"', html) == [(n, n) for n in names]
    assert 'id="page-missing"' in html and "No figure" in html


def test_the_script_names_no_page_list_of_its_own():
    from ccq_eval.view.page import asset

    script = asset("viewer.js")
    drawn = re.search(r"const DRAW = \{(.*?)\n\};", script, re.DOTALL).group(1)
    keys = re.findall(r"^\s*(\w+):", drawn, re.MULTILINE)
    assert keys and set(keys) < {name for name, _ in PAGES}  # figures come drawn
    assert not re.search(r"\{\s*runs:\s*1", script)  # the old list of known pages
    assert '"#runs"' not in script
