"""What every figure shares: matplotlib without a display, labels matplotlib shows verbatim, and writing PNG +
PDF."""

from __future__ import annotations

from pathlib import Path


def pyplot():
    """matplotlib.pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


PLOT_LABEL_CHARS = 60  # a longer label is shown by its start and end: a 10,000-character one squeezed the axes away


def plot_label(label: str) -> str:
    """A label as matplotlib shows it verbatim: "$" would start mathtext, a leading "_" hides a legend
    entry, a newline would break the line; a very long one shortened in the middle (start and end kept, so labels
    that differ only at the end stay apart)."""
    text = " ".join(str(label).splitlines())
    if len(text) > PLOT_LABEL_CHARS:
        text = text[: PLOT_LABEL_CHARS - 16] + "…" + text[-15:]
    text = text.replace("$", r"\$")
    return "\u200b" + text if text.startswith("_") else text


def write_figure(fig, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths
