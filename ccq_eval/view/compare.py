"""The compare pages' data: two labels on every cell both have, from the pairs table's own paired cells
(Suite.paired_cells: the latest unit of each label, samples matched by prompt hash) and their own tests
(cell.compare), so the page and `tables --table pairs` show one number. Each pair is kept once, in sorted
order; the page reads B against A by flipping it (the sign test and the bootstrap are symmetric)."""

from __future__ import annotations

from itertools import combinations

import numpy as np

from ccq_eval.report.paired_tests import PerplexityCell, p_text
from ccq_eval.catalogue.pairs import paired_cells
from ccq_eval.report.labels import pairs_of

ALL_PAIRS_UP_TO = 16  # labels: every two of them get a compare page; past that the CCQ / backbone pairs and --compare


def compared_pairs(labels: list[str], asked: list[tuple[str, str]] = ()) -> list[tuple[str, str]]:
    """Sorted (a, b) pairs the file carries: every two labels of a small store, else the pairs table's pairs,
    and the ones asked for."""
    chosen = set(combinations(sorted(labels), 2)) if len(labels) <= ALL_PAIRS_UP_TO else set()
    chosen |= {tuple(sorted(pair)) for pair in pairs_of(labels)}
    chosen |= {tuple(sorted(pair)) for pair in asked}
    return sorted(chosen)


def _finite(x) -> float | None:
    return float(x) if x is not None and np.isfinite(x) else None


def _interval_text(delta: float, low: float, high: float, digits: int) -> str:
    """The delta as the pairs table writes it, with its 95% interval where the test gives one."""
    text = f"{delta:+.{digits}f}"
    return text + (f" [{low:+.{digits}f}, {high:+.{digits}f}]" if np.isfinite(low) and np.isfinite(high) else "")


def _prompt_index(units: list[dict]) -> dict[tuple, dict[str, int]]:
    """(label, task, length) -> prompt hash -> sample index, from the units the page holds."""
    out = {}
    for unit in units:
        if "prompts" in unit:
            out[(unit["label"], unit["task"], unit["length"])] = {h: row[0] for h, row in zip(unit["prompts"],
                                                                                              unit["rows"]) if h}
    return out


def _score_entry(cell, a: str, b: str, index_a: dict, index_b: dict) -> dict:
    both = cell.scores[[a, b]].dropna()
    score_a, score_b = both[a].to_numpy(float), both[b].to_numpy(float)
    binary = bool(np.isin(score_a, (0.0, 100.0)).all() and np.isin(score_b, (0.0, 100.0)).all())
    differ = np.flatnonzero(score_a != score_b)
    hashes = both.index.to_numpy()
    return {"kind": "score", "better": int((score_a > score_b).sum()), "worse": int((score_a < score_b).sum()),
            "binary": binary,
            "discordant": [[index_a.get(hashes[i]), index_b.get(hashes[i]), float(score_a[i]), float(score_b[i])]
                           for i in differ]}


def _perplexity_entry(cell: PerplexityCell, a: str, b: str, index_a: dict, index_b: dict) -> dict:
    both = cell.nll[[a, b]].dropna()
    tokens = cell.tokens.loc[both.index]
    with np.errstate(over="ignore"):  # a collapsed model's perplexity overflows: shown as inf
        ppl_a = np.exp(both[a].to_numpy(float) / tokens[a].to_numpy(float))
        ppl_b = np.exp(both[b].to_numpy(float) / tokens[b].to_numpy(float))
    hashes = both.index.to_numpy()
    order = np.argsort(-np.abs(np.nan_to_num(ppl_a - ppl_b, nan=0.0, posinf=np.inf)), kind="stable")
    return {"kind": "perplexity",  # the largest per-document difference first
            "docs": [[index_a.get(hashes[i]), index_b.get(hashes[i]), _finite(ppl_a[i]), _finite(ppl_b[i])]
                     for i in order]}


def compare_entries(results, units: list[dict], pairs: list[tuple[str, str]]) -> list[dict]:
    """One entry per pair with the cells both labels have: the paired result and what lies behind it."""
    cells = paired_cells(results)
    index = _prompt_index(units)
    out = []
    for a, b in pairs:
        entries = []
        for column, cell in cells.items():
            result = cell.compare(a, b) if {a, b} <= cell.labels() else None
            if result is None:
                continue
            index_a, index_b = index.get((a, cell.task, cell.length), {}), index.get((b, cell.task, cell.length), {})
            detail = (_perplexity_entry if isinstance(cell, PerplexityCell) else _score_entry)(cell, a, b, index_a,
                                                                                                 index_b)
            entries.append({"column": column, "task": cell.task, "length": cell.length, "digits": cell.digits,
                            "delta": _finite(result.delta), "low": _finite(result.low), "high": _finite(result.high),
                            "p": _finite(result.p_value), "n": result.n, "p_text": p_text(result.p_value),
                            "delta_text": _interval_text(result.delta, result.low, result.high, cell.digits),
                            "delta_text_flipped": _interval_text(-result.delta, -result.high, -result.low, cell.digits),
                            **detail})
        if entries:
            out.append({"a": a, "b": b, "cells": entries})
    return out
