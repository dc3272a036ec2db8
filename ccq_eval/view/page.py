"""The report as one HTML file: a Content-Security-Policy that forbids every fetch (only this page's own script,
by hash, runs), the style and script from assets/, the figures as inline SVG, and the data as JSON in a
script block that never executes. Stored text reaches the page only inside that JSON, escaped so that no
byte sequence of it can close the block; the script puts it in the page as text nodes, never as markup."""

from __future__ import annotations

import base64
import hashlib
import html
import importlib.resources
import json
import re

# The mark `ccq-eval view --out` looks for before it replaces a file: only a report it wrote is overwritten
GENERATOR = '<meta name="generator" content="ccq-eval view">'
TITLE = "<title>ccq-eval report</title>"  # reports written before the mark carry this title


def is_report(head: str) -> bool:
    """Whether the first bytes of a file (``head``, a few KB as text) are those of a report ccq-eval wrote."""
    return head.lstrip().startswith("<!DOCTYPE html>") and (GENERATOR in head or TITLE in head)


_SURROGATE = re.compile("[\ud800-\udfff]")
# inside a <script> block, "</script" or "<!--" in a string would end or alter it; U+2028/2029 broke older parsers
_JSON_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}


def asset(name: str) -> str:
    return (importlib.resources.files("ccq_eval.view") / "assets" / name).read_text(encoding="utf-8")


def embedded_json(data) -> str:
    """JSON text safe inside a <script type="application/json"> block (lone surrogates, which UTF-8 cannot hold,
    become U+FFFD)."""
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    text = _SURROGATE.sub("\ufffd", text)
    return re.sub("[<>&\u2028\u2029]", lambda m: _JSON_ESCAPES[m.group(0)], text)


def content_security_policy(script: str) -> str:
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode()
    return ("default-src 'none'; "
            f"script-src 'sha256-{digest}'; style-src 'unsafe-inline'; img-src data:; "
            "base-uri 'none'; form-action 'none'")


def figure_markup(figures: list[dict]) -> str:
    return "\n".join(f'<figure class="figure" id="figure-{html.escape(f["name"])}" data-figure="{html.escape(f["name"])}">'
                     f'<figcaption>{html.escape(f["name"])}</figcaption>{f["svg"]}</figure>' for f in figures)


# the report's pages, in the navigation's order: (name, title); each is a section the script draws from the JSON
# (figures: drawn here, as inert SVG), reached at #<name>
PAGES = (("runs", "Runs"), ("tables", "Tables"), ("figures", "Figures"), ("samples", "Samples"),
         ("compare", "Compare"))
FIGURES_NOTE = ("Drawn by the same code as <code>ccq-eval curves</code>: a CCQ model in its backbone's colour, the "
                "backbone dashed, seeds as a band.")


def navigation() -> str:
    return "".join(f'<a href="#{name}">{title}</a>' for name, title in PAGES)


def page_sections(figures: list[dict]) -> str:
    """A hidden section per page (the figures page filled), and one for an address the report has no page for."""
    empty = '<p class="empty">No figure: the store holds nothing a figure draws.</p>'
    drawn = {"figures": f'<h2>Figures</h2>\n<p class="note">{FIGURES_NOTE}</p>\n{figure_markup(figures) or empty}\n'}
    return "\n".join([*(f'<section id="page-{name}" class="page" data-page="{name}" hidden>{drawn.get(name, "")}</section>'
                         for name, _ in PAGES), '<section id="page-missing" class="page" hidden></section>'])


def page(data: dict, figures: list[dict]) -> str:
    script = asset("viewer.js")
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{content_security_policy(script)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
{GENERATOR}
<link rel="icon" href="data:,">
{TITLE}
<style>{asset("viewer.css")}</style>
</head>
<body>
<header>
<h1>ccq-eval report</h1>
<nav>{navigation()}</nav>
<p id="summary"></p>
</header>
<main>
{page_sections(figures)}
</main>
<script type="application/json" id="report-data">{embedded_json(data)}</script>
<script>{script}</script>
</body>
</html>
"""
