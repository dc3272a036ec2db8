"""The README is a front page and docs/ holds the rest: the CLI reference is current, every link resolves,
and the product speaks of itself only."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ccq_eval.cli.reference import reference

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_the_cli_reference_is_generated_from_the_current_parser():
    committed = (ROOT / "docs" / "cli.md").read_text()
    assert committed == reference(), "run: python -m ccq_eval.cli.reference docs/cli.md"
    for flag in ("--model", "--suite", "--shard", "--reference", "--corpora", "--delete"):
        assert flag in committed


def test_the_readme_is_a_front_page():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= 200, len(lines)
    headings = [line for line in lines if line.startswith("## ")]
    assert "## Two commands" in headings and "## Install" in headings
    text = "\n".join(lines)
    assert "make demo" in text and "make test" in text


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_every_relative_link_resolves(page):
    for target in LINK.findall(page.read_text()):
        if target.startswith(("http://", "https://", "mailto:")):
            continue
        assert (page.parent / target).exists(), f"{page.name}: {target}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_pages_speak_of_the_product_only(page):
    text = page.read_text()
    for phrase in ("session", "was lent", "been lent", "lent GPU", "shared/", "paper.md", "DESIGN.md"):
        assert phrase not in text, f"{page.name}: {phrase!r}"
