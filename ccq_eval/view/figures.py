"""A catalogue figure as SVG markup for the page: drawn by the same code as `ccq-eval curves`, text kept as text
(``svg.fonttype: none``, escaped by matplotlib's writer), then parsed and refused if anything in it could act:
a script, a foreign object, an event attribute or a link that leaves the file."""

from __future__ import annotations

import io
import re
import xml.etree.ElementTree as ET

from ccq_eval.catalogue import draw_figure

SVG = "{http://www.w3.org/2000/svg}"
XLINK_HREF = "{http://www.w3.org/1999/xlink}href"
ACTIVE_ELEMENTS = {"script", "foreignObject", "iframe", "object", "embed", "a", "animate", "set"}  # <use> refers within


class UnsafeFigure(ValueError):
    """An SVG holding something that could run or fetch: never put in a page."""


def check_inert(svg: str) -> None:
    """Raises UnsafeFigure unless every element and attribute of ``svg`` only draws."""
    root = ET.fromstring(svg)
    for element in root.iter():
        tag = element.tag.removeprefix(SVG)
        if tag in ACTIVE_ELEMENTS:
            raise UnsafeFigure(f"<{tag}> in a figure")
        for name, value in element.attrib.items():
            if name.lower().startswith("on"):
                raise UnsafeFigure(f"event attribute {name!r} in a figure")
            if name in ("href", XLINK_HREF) and not value.startswith(("data:image/png;base64,", "#")):
                raise UnsafeFigure(f"a link to {value[:40]!r} in a figure")


def to_svg(fig, name: str) -> str:
    """The figure as one <svg> element: no XML prolog or doctype, no comments, ids salted by the figure's name
    (the same store draws the same file)."""
    import matplotlib
    import matplotlib.pyplot as plt

    buffer = io.StringIO()
    with matplotlib.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    text = text[text.index("<svg"):]
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    check_inert(text)
    return text


def figure_svg(results, name: str) -> str | None:
    fig = draw_figure(results, name)
    return None if fig is None else to_svg(fig, name)
