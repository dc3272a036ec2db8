"""The pairs table, across suites: every CCQ model against its backbone on the same samples, with a paired
test per cell (report/paired_tests.py), seed by seed, then the mean ± sd of the delta over seeds.

Pairs come from the labels' own conventions (report/labels.py): ``ccq-NAME`` against ``NAME`` (a trained CCQ model
and its backbone, the zoo's naming, seed suffixes included) and ``NAME+ccq<lambda>`` against ``NAME`` (training-free
CCQ on the same weights, `run`'s default label). S-NIAH cells pair prompts by their hash; perplexity cells
pair sequences by theirs, so only samples both models scored count.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ccq_eval.report.entries import table
from ccq_eval.report.formats import DELTA_ROW, Rendered, csv_text, grid
from ccq_eval.report.labels import model_name, pairs_of
from ccq_eval.report.paired_tests import PairedResult, p_text
from ccq_eval.suites import SUITES


def paired_cells(results) -> dict:
    """Every suite's paired cells (Suite.paired_cells), in the registry's order."""
    cells = {}
    for suite in SUITES.values():
        cells.update(suite.paired_cells(results))
    return cells


def paired_results(cells: dict) -> dict[tuple[str, str], dict[str, PairedResult]]:
    """(CCQ label, backbone label) -> column -> the paired result on the samples both scored."""
    labels = set().union(*(cell.labels() for cell in cells.values())) if cells else set()
    out = {}
    for model, base in pairs_of(labels):
        results = {column: result for column, cell in cells.items() if (result := cell.compare(model, base))}
        if results:
            out[(model, base)] = results
    return out


@table("pairs", about="ccq-NAME and NAME+ccq<lambda> against NAME on the same samples, with paired tests")
def pairs_table(results, options) -> Rendered | None:
    cells_by_column = paired_cells(results)
    results = paired_results(cells_by_column)
    if not results:
        return None
    digits = {column: cell.digits for column, cell in cells_by_column.items()}
    columns = list(dict.fromkeys(c for cells in results.values() for c in cells))
    rows, texts, long = {}, {}, []
    for (model, base), cells in results.items():
        name = f"{model} − {base}"
        rows[name] = {c: r.delta for c, r in cells.items()}
        texts[name] = {c: f"{r.delta:+.{digits[c]}f} ({p_text(r.p_value)})" for c, r in cells.items()}
        long += [{"model": model, "baseline": base, "column": c, "delta": r.delta, "ci_low": r.low, "ci_high": r.high,
                  "p_value": r.p_value, "n": r.n, "seeds": 1} for c, r in cells.items()]
    for (model, base), group in seed_groups(results).items():
        if len(group) < 2:
            continue
        name = f"{model} − {base}: mean ± sd over {len(group)} seeds"
        rows[name], texts[name] = {}, {}
        for column in columns:
            deltas = np.array([results[pair][column].delta for pair in group if column in results[pair]])
            if len(deltas) == len(group):
                mean, sd = float(deltas.mean()), float(deltas.std(ddof=1))
                rows[name][column] = mean
                texts[name][column] = f"{mean:+.{digits[column]}f} ± {sd:.{digits[column]}f}"
                long.append({"model": model, "baseline": base, "column": column, "delta": mean, "ci_low": np.nan,
                             "ci_high": np.nan, "p_value": np.nan, "n": len(deltas), "seeds": len(group), "sd": sd})
    values = pd.DataFrame(rows).T.reindex(columns=columns)
    cells = pd.DataFrame(texts).T.reindex(index=values.index, columns=columns).fillna("–")
    no_best = {c: True for c in columns}
    caption = ("CCQ minus its backbone on the same samples: S-NIAH accuracy (points; exact sign test, McNemar's for "
               "0/1 scores) and perplexity (paired bootstrap over sequences); then mean ± sd of the delta over seeds")
    blank = values.where(values.isna())  # a delta has no "best" to put in bold
    return Rendered(grid(blank, cells, caption, no_best, kinds={name: DELTA_ROW for name in cells.index}),
                    csv_text(pd.DataFrame(long), "%.10g", index=False))


def seed_groups(results) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """(CCQ model, backbone) without seed suffixes -> its per-seed pairs."""
    groups: dict[tuple[str, str], list] = {}
    for model, base in results:
        key = (model_name(model), model_name(base))
        groups.setdefault(key, []).append((model, base))
    return groups
