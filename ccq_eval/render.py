"""Tables and figures as pure functions of the store: store -> tidy DataFrame -> table / figure.

Where a label has several complete units for one cell (reruns, other runs), the latest one counts.
Failed units never reach a table: they show as missing cells.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from ccq_eval.store import Store
from ccq_eval.suites import SUITES, format_length

FORMATS = ("csv", "latex", "md")
EXTENSIONS = {"csv": "csv", "latex": "tex", "md": "md"}
TABLES = ("sniah",)
FIGURES = ("sniah-depth",)


def metrics_frame(store: Store) -> pd.DataFrame:
    """Every metric row of a complete unit, the latest unit per (label, suite, task, length, metric)."""
    frame = store.frame(
        "SELECT m.label, m.model, m.suite, m.task, m.context_length, m.metric, m.value, m.stderr, m.n, "
        "m.higher_is_better, m.is_primary, u.id AS unit_id, u.finished, u.settings "
        "FROM metrics m JOIN units u ON u.id = m.unit_id WHERE u.status = 'complete'")
    if frame.empty:
        return frame
    frame = frame.sort_values(["finished", "unit_id"])
    return frame.groupby(["label", "suite", "task", "context_length", "metric"], as_index=False).last()


def wilson_interval(successes: float, n: int) -> tuple[float, float]:
    """95% Wilson score interval for a proportion, in percent (stays inside [0, 100] at 0% and 100%)."""
    from scipy.stats import binomtest

    if not n:
        return (math.nan, math.nan)
    interval = binomtest(int(round(successes)), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return (100 * interval.low, 100 * interval.high)


def _haystack_of(settings: str) -> str | None:
    haystack = json.loads(settings).get("haystack")
    return haystack["name"] if haystack else None


def sniah_table(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(values, ci_low, ci_high): rows = labels, columns = S1/S2/S3 x lengths in the paper's order.
    S-NIAH-2/3 columns carry their haystack's name: numbers on another haystack are not the paper's."""
    suite = SUITES["sniah"]
    rows = frame[(frame.suite == "sniah") & (frame.metric == "score")].copy()
    if rows.empty:
        return (pd.DataFrame(),) * 3
    rows["haystack"] = rows.settings.map(_haystack_of)
    rows["column"] = [
        f"{suite.display[t]}{f' ({h})' if isinstance(h, str) else ''} {format_length(L)}"
        for t, h, L in zip(rows.task, rows.haystack, rows.context_length)
    ]
    rows["order"] = [(suite.tasks.index(t), h if isinstance(h, str) else "", L) for t, h, L in zip(rows.task, rows.haystack, rows.context_length)]
    columns = [c for _, c in sorted(set(zip(rows.order, rows.column)))]
    bounds = [wilson_interval(v / 100 * n, int(n)) for v, n in zip(rows.value, rows.n)]
    rows["low"], rows["high"] = [b[0] for b in bounds], [b[1] for b in bounds]

    def pivot(field):
        return rows.pivot(index="label", columns="column", values=field).reindex(columns=columns)

    return pivot("value"), pivot("low"), pivot("high")


def _cells(values: pd.DataFrame, low: pd.DataFrame | None, high: pd.DataFrame | None) -> pd.DataFrame:
    def cell(v, lo, hi):
        if pd.isna(v):
            return "–"
        return f"{v:.1f}" if lo is None else f"{v:.1f} [{lo:.1f}, {hi:.1f}]"

    return pd.DataFrame([[cell(values.iat[i, j], None if low is None else low.iat[i, j],
                               None if high is None else high.iat[i, j])
                          for j in range(values.shape[1])] for i in range(values.shape[0])],
                        index=values.index, columns=values.columns)


def _best_mask(values: pd.DataFrame, higher_is_better: bool = True) -> pd.DataFrame:
    best = values.max() if higher_is_better else values.min()
    return values.eq(best) & values.notna()


def _escape_markdown(text: str) -> str:
    return "".join("\\" + ch if ch in "\\|*_`[]<>#" else ch for ch in str(text))


def to_latex(values: pd.DataFrame, cells: pd.DataFrame, caption: str | None = None) -> str:
    """pandas Styler: booktabs rules, best value per column in bold, labels and headers escaped."""
    mask = _best_mask(values)
    cells = cells.rename_axis(index=None, columns=None)
    styler = cells.style.apply(lambda _: mask.replace({True: "textbf:--rwrap;", False: ""}), axis=None)
    styler = styler.format(escape="latex").format_index(escape="latex", axis=0).format_index(escape="latex", axis=1)
    return styler.to_latex(hrules=True, caption=caption, column_format="l" + "r" * len(cells.columns))


def to_markdown(values: pd.DataFrame, cells: pd.DataFrame) -> str:
    mask = _best_mask(values)
    shown = cells.copy().astype(object)
    for i in range(shown.shape[0]):
        for j in range(shown.shape[1]):
            if mask.iat[i, j]:
                shown.iat[i, j] = f"**{shown.iat[i, j]}**"
    shown.index = [_escape_markdown(x) for x in shown.index]
    shown.columns = [_escape_markdown(x) for x in shown.columns]
    shown.index.name = "label"
    return shown.to_markdown(tablefmt="pipe")


def to_csv(values: pd.DataFrame, low: pd.DataFrame | None, high: pd.DataFrame | None) -> str:
    frame = values.copy()
    if low is not None:
        for column in values.columns:
            frame[f"{column} ci_low"], frame[f"{column} ci_high"] = low[column], high[column]
    frame.index.name = "label"
    return frame.to_csv(float_format="%.4g")


def render_table(store: Store, table: str, fmt: str, ci: bool = False) -> dict[str, str] | None:
    """{format: text} for every format (the files), or None when the store has nothing for the table."""
    frame = metrics_frame(store)
    if frame.empty:
        return None
    if table != "sniah":
        raise ValueError(f"--table {table!r}: unknown; available: {', '.join(TABLES)}")
    values, low, high = sniah_table(frame)
    if values.empty:
        return None
    if not ci:
        low = high = None
    cells = _cells(values, low, high)
    caption = r"S-NIAH accuracy (\%)" + (r" with 95\% Wilson intervals" if ci else "")
    return {"csv": to_csv(values, low, high), "latex": to_latex(values, cells, caption), "md": to_markdown(values, cells)}


# --- figures -------------------------------------------------------------------------------------------

def sniah_depth_frame(store: Store) -> pd.DataFrame:
    """Per-sample scores with needle depth, for the latest complete unit of each (label, task, length)."""
    frame = store.frame(
        "SELECT r.label, u.task, u.context_length, u.id AS unit_id, u.finished, s.score, s.fields "
        "FROM samples s JOIN units u ON u.id = s.unit_id JOIN runs r ON r.id = u.run_id "
        "WHERE u.status = 'complete' AND u.suite = 'sniah'")
    if frame.empty:
        return frame
    latest = frame.sort_values(["finished", "unit_id"]).groupby(["label", "task", "context_length"]).unit_id.last()
    frame = frame[frame.unit_id.isin(set(latest))].copy()
    frame["depth"] = frame.fields.map(lambda f: json.loads(f)["depth"])
    return frame


def sniah_depth_figure(store: Store):
    """The needle heatmap: depth (10% bins) x context length, one panel per (task, label)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    frame = sniah_depth_frame(store)
    if frame.empty:
        return None
    frame["bin"] = np.minimum((frame.depth // 10).astype(int), 9)
    labels, tasks = sorted(frame.label.unique()), [t for t in SUITES["sniah"].tasks if t in set(frame.task)]
    lengths = sorted(frame.context_length.unique())
    fig, axes = plt.subplots(len(tasks), len(labels), figsize=(2.2 + 1.1 * len(lengths) * len(labels), 2.6 * len(tasks)),
                             squeeze=False, constrained_layout=True)
    image = None
    for i, task in enumerate(tasks):
        for j, label in enumerate(labels):
            sub = frame[(frame.task == task) & (frame.label == label)]
            grid = sub.pivot_table(index="bin", columns="context_length", values="score", aggfunc="mean")
            grid = grid.reindex(index=range(10), columns=lengths)
            ax = axes[i, j]
            image = ax.imshow(grid.values, vmin=0, vmax=100, cmap="RdYlGn", aspect="auto", origin="upper")
            ax.set_xticks(range(len(lengths)), [format_length(L) for L in lengths])
            ax.set_yticks(range(10), [f"{10 * b}%" for b in range(10)])
            ax.set_title(f"{label} · {SUITES['sniah'].display[task]}", fontsize=9)
            if j == 0:
                ax.set_ylabel("needle depth")
            if i == len(tasks) - 1:
                ax.set_xlabel("context length")
    fig.colorbar(image, ax=axes, shrink=0.8, label="accuracy (%)")
    return fig


def write_figure(fig, out_dir: Path, name: str) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = [out_dir / f"{name}.png", out_dir / f"{name}.pdf"]
    for path in paths:
        fig.savefig(path, dpi=150)
    return paths
