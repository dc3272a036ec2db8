"""Paired tests between two models scored on the same samples, for the tables' delta cells.

- S-NIAH's per-prompt scores: the exact sign test on the prompts where the two differ. For 0/100 scores
  (one needle) that is McNemar's exact test: under "no difference" each discordant prompt is a fair coin.
- Perplexity over sequences: a paired bootstrap (Koehn 2004's for MT, over sequences here). Both models'
  corpus perplexities are recomputed on each resample of the sequences; the interval is the percentile one
  and the p-value twice the smaller tail of the resampled difference around zero.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

BOOTSTRAP_RESAMPLES = 2000
BOOTSTRAP_SEED = 0  # fixed: a table rendered twice shows the same interval


@dataclass(frozen=True)
class PairedResult:
    delta: float  # model − baseline, in the cell's unit
    low: float  # 95% interval of the delta (NaN where the test gives none)
    high: float
    p_value: float
    n: int  # paired samples


def sign_test_p(better: int, worse: int) -> float:
    """Two-sided exact binomial p-value of `better` against `worse` discordant samples (p = 1/2)."""
    from scipy.stats import binomtest

    if better + worse == 0:
        return 1.0
    return float(binomtest(better, better + worse, 0.5).pvalue)


def mcnemar(model: np.ndarray, baseline: np.ndarray) -> PairedResult:
    """Per-sample scores of two models on the same samples (same order): the mean difference, its 95%
    normal interval, and the exact sign test's p-value."""
    diff = np.asarray(model, float) - np.asarray(baseline, float)
    n = len(diff)
    half = 1.96 * diff.std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
    mean = float(diff.mean()) if n else np.nan
    return PairedResult(mean, mean - half, mean + half, sign_test_p(int((diff > 0).sum()), int((diff < 0).sum())), n)


def bootstrap_indices(n: int, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """[resamples, n] sequence indices drawn with replacement."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def perplexity_bootstrap(model_nll: np.ndarray, baseline_nll: np.ndarray, tokens: np.ndarray,
                         indices: np.ndarray | None = None) -> PairedResult:
    """Per-sequence summed NLLs of two models on the same sequences and their token counts: the corpus
    perplexity difference (model − baseline), its percentile interval and p-value over paired resamples."""
    model_nll, baseline_nll, tokens = (np.asarray(a, float) for a in (model_nll, baseline_nll, tokens))
    n = len(tokens)
    delta = float(np.exp(model_nll.sum() / tokens.sum()) - np.exp(baseline_nll.sum() / tokens.sum()))
    if n < 2:
        return PairedResult(delta, np.nan, np.nan, np.nan, n)
    picks = bootstrap_indices(n) if indices is None else indices
    denominator = tokens[picks].sum(axis=1)
    resampled = np.exp(model_nll[picks].sum(axis=1) / denominator) - np.exp(baseline_nll[picks].sum(axis=1) / denominator)
    low, high = np.percentile(resampled, [2.5, 97.5])
    return PairedResult(delta, float(low), float(high), bootstrap_p(resampled), n)


def bootstrap_p(resampled: np.ndarray) -> float:
    """Twice the smaller share of resampled differences on either side of zero (ties count to both), at most 1."""
    below, above = float(np.mean(resampled <= 0)), float(np.mean(resampled >= 0))
    return min(1.0, 2 * min(below, above))


def p_text(p: float) -> str:
    """A p-value as a table shows it: three decimals below 0.1, two above, "p<0.001" at the bottom."""
    if np.isnan(p):
        return "p –"
    return "p<0.001" if p < 0.001 else f"p {p:.3f}" if p < 0.1 else f"p {p:.2f}"


def _shared_rows(frame: pd.DataFrame, model: str, baseline: str) -> pd.DataFrame | None:
    """The two labels' columns on the samples both have (rows: sample hash); None when they share none."""
    if not {model, baseline} <= set(frame.columns):
        return None
    both = frame[[model, baseline]].dropna()
    return both if len(both) else None


@dataclass(frozen=True)
class ScoreCell:
    """One table cell's per-sample scores for every label (rows: prompt hash, columns: labels)."""

    scores: pd.DataFrame
    digits: int = 1
    task: str | None = None  # the unit the cell reads (the viewer links its samples)
    length: int | None = None

    def labels(self) -> set[str]:
        return set(self.scores.columns)

    def compare(self, model: str, baseline: str) -> PairedResult | None:
        """The sign test on the prompts both labels were scored on; None when they share none."""
        both = _shared_rows(self.scores, model, baseline)
        return None if both is None else mcnemar(both[model].to_numpy(), both[baseline].to_numpy())


@dataclass(frozen=True)
class PerplexityCell:
    """One table cell's per-sequence summed NLL and token counts for every label (rows: sequence hash)."""

    nll: pd.DataFrame
    tokens: pd.DataFrame
    digits: int = 2
    task: str | None = None
    length: int | None = None

    def labels(self) -> set[str]:
        return set(self.nll.columns)

    def compare(self, model: str, baseline: str) -> PairedResult | None:
        """The paired bootstrap on the sequences both labels scored; None when they share none."""
        both = _shared_rows(self.nll, model, baseline)
        if both is None:
            return None
        return perplexity_bootstrap(both[model].to_numpy(), both[baseline].to_numpy(),
                                    self.tokens.loc[both.index, model].to_numpy())


def delta_row_tests(cells: dict, baseline: str, suffix: str) -> dict:
    """A suite table's paired tests for its --baseline delta rows: (label − baseline row, table column) ->
    PairedResult, from the suite's paired cells (their column names are the table's plus ``suffix``); a
    label sharing fewer than two samples with the baseline gets none."""
    out = {}
    for column, cell in cells.items():
        for label in sorted(cell.labels() - {baseline}):
            result = cell.compare(label, baseline)
            if result is not None and result.n > 1:
                out[(f"{label} − {baseline}", column.removesuffix(suffix))] = result
    return out
