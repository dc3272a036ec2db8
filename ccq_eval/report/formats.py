"""One table, three formats: CSV (numbers, interval bounds as columns), LaTeX (pandas Styler,
booktabs, best in bold, escaped) and Markdown (pipe table, best in bold, escaped)."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from ccq_eval.text import visible

EXTENSIONS = {"csv": "csv", "latex": "tex", "md": "md"}


def best_mask(values: pd.DataFrame, higher_is_better: bool | dict = True) -> pd.DataFrame:
    """Best value per column; higher_is_better may be one flag or one per column. A column where every row with a
    value ties (all 0 %, say) has no best: nothing in it is bold."""
    direction = higher_is_better if isinstance(higher_is_better, dict) else {c: higher_is_better for c in values.columns}
    finite = values.apply(pd.to_numeric, errors="coerce").replace([float("inf"), float("-inf")], float("nan"))
    best = pd.Series({c: (finite[c].max() if direction.get(c, True) else finite[c].min()) for c in values.columns})
    mask = finite.eq(best) & finite.notna()
    all_tied = (mask.sum() == finite.notna().sum()) & (finite.notna().sum() > 1)
    return mask & ~all_tied


def one_line(text) -> str:
    """A label on one line, printable: a newline would split a Markdown row or end a LaTeX paragraph, and a
    control or format character from a stored label would act on the terminal `tables` prints to or reorder
    the text around it; those are shown escaped (``\\x1b``, ``\\u202e``; text.visible)."""
    return visible(text)


def escape_markdown(text: str) -> str:
    return "".join("\\" + ch if ch in "\\|*_`[]<>#" else ch for ch in one_line(str(text)))


FAMILY = "family"


def with_family(cells: pd.DataFrame, families: dict | None) -> pd.DataFrame:
    """The cells with a first text column naming each row's model family (rows without one: empty;
    no column when no row has one)."""
    names = [(families or {}).get(label, "") for label in cells.index]
    if not any(names):  # no row's run recorded a model config (hand-made or ingested stores)
        return cells
    shown = cells.copy()
    shown.insert(0, FAMILY, names)
    return shown


MEASURED, REPORTED_ROW, DELTA_ROW = "measured", "reported", "delta"


@dataclass(frozen=True)
class Grid:
    """A table as its formats show it: the text cells (a family column first when a row has one), which cells
    are the best of their column, the caption, and each row's kind (measured, reported, delta)."""

    cells: pd.DataFrame
    bold: pd.DataFrame
    caption: str | None = None
    kinds: dict = field(default_factory=dict)  # row label -> kind; MEASURED when absent

    def kind(self, label) -> str:
        return self.kinds.get(label, MEASURED)


def grid(values: pd.DataFrame, cells: pd.DataFrame, caption: str | None = None, higher_is_better: bool | dict = True,
         families: dict | None = None, kinds: dict | None = None) -> Grid:
    """The Grid of ``cells``, the best of each column of ``values`` in bold."""
    cells = with_family(cells, families)
    bold = best_mask(values, higher_is_better).reindex(index=cells.index, columns=cells.columns, fill_value=False)
    return Grid(cells, bold.astype(bool), caption, dict(kinds or {}))


PARTIAL = " (partial)"


def mark_partial(table: Grid, partial: dict[str, str]) -> Grid:
    """The grid with each partial row's label marked and the caption saying why (a shard of its job is missing)."""
    if not partial:
        return table
    rename = {label: f"{label}{PARTIAL}" for label in partial}
    why = "; ".join(f"{label}: {reason}" for label, reason in partial.items())
    caption = f"{table.caption} " if table.caption else ""
    return Grid(table.cells.rename(index=rename), table.bold.rename(index=rename), f"{caption}Partial rows ({why}).",
                {rename.get(label, label): kind for label, kind in table.kinds.items()})


@dataclass(frozen=True)
class Rendered:
    """One table, rendered: its grid (LaTeX, Markdown, the viewer's HTML) and its CSV (the numbers)."""

    grid: Grid
    csv: str

    def formats(self) -> dict[str, str]:
        return {"csv": self.csv, "latex": to_latex(self.grid), "md": to_markdown(self.grid)}


def to_latex(table: Grid) -> str:
    """pandas Styler: booktabs rules, best value per column in bold, labels and headers escaped."""
    cells = table.cells.rename_axis(index=None, columns=None).rename(index=one_line, columns=one_line)
    mask = table.bold.rename(index=one_line, columns=one_line)
    styler = cells.style.apply(lambda _: mask.replace({True: "textbf:--rwrap;", False: ""}), axis=None)
    styler = styler.format(escape="latex").format_index(escape="latex", axis=0).format_index(escape="latex", axis=1)
    text_columns = "l" * (1 + (FAMILY in cells.columns))
    return styler.to_latex(hrules=True, caption=table.caption,
                           column_format=text_columns + "r" * (len(cells.columns) + 1 - len(text_columns)))


def to_markdown(table: Grid) -> str:
    shown = table.cells.copy().astype(object)
    for i in range(shown.shape[0]):
        for j in range(shown.shape[1]):
            if table.bold.iat[i, j]:
                shown.iat[i, j] = f"**{shown.iat[i, j]}**"
    shown.index = [escape_markdown(x) for x in shown.index]
    shown.columns = [escape_markdown(x) for x in shown.columns]
    shown.index.name = "label"
    return shown.to_markdown(tablefmt="pipe")


# a text cell a spreadsheet would read as a formula (OWASP's CSV-injection list: = + - @, tab, carriage return)
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def inert(text):
    """A text cell as a spreadsheet shows it, never runs it: one starting as a formula would is prefixed with ``'``
    (OWASP's advice); numbers are never text here, so a negative number stays a number."""
    return "'" + text if isinstance(text, str) and text.startswith(FORMULA_START) else text


def csv_text(frame: pd.DataFrame, float_format: str, index: bool = True) -> str:
    """The frame as CSV with every text cell, label and heading made inert (a label is whatever a user typed)."""
    frame = frame.copy()
    for column in frame.columns:
        if not pd.api.types.is_numeric_dtype(frame[column]):  # text (object, or pandas' own string dtype)
            frame[column] = frame[column].map(inert)
    frame.columns = [inert(c) for c in frame.columns]
    frame.index = frame.index.map(inert).rename(frame.index.name)
    return frame.to_csv(float_format=float_format, index=index)


def to_csv(values: pd.DataFrame, low: pd.DataFrame | None, high: pd.DataFrame | None,
           families: dict | None = None, partial: dict | None = None) -> str:
    frame = with_family(values, families)
    if low is not None:
        for column in values.columns:
            frame[f"{column} ci_low"], frame[f"{column} ci_high"] = low[column], high[column]
    if partial:  # why a row is partial (a shard of its job missing); empty for whole rows
        frame["partial"] = [partial.get(label, "") for label in frame.index]
    frame.index.name = "label"
    return csv_text(frame, "%.4g")


def number_cells(values: pd.DataFrame, digits: int = 2, signed_rows=()) -> pd.DataFrame:
    """Each number as text with ``digits`` decimals ("–" when missing; a sign on delta rows)."""
    def cell(label, v):
        if pd.isna(v):
            return "–"
        return f"{v:+.{digits}f}" if label in signed_rows else f"{v:.{digits}f}"

    return pd.DataFrame([[cell(label, v) for v in row] for label, row in zip(values.index, values.values)],
                        index=values.index, columns=values.columns)
