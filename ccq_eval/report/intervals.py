"""95% intervals the tables show."""

from __future__ import annotations

import math


def wilson_interval(successes: float, n: float) -> tuple[float, float]:
    """95% Wilson score interval for a proportion, in percent (stays inside [0, 100] at 0% and 100%); no interval
    (NaN) where the count is missing or not a count."""
    from scipy.stats import binomtest

    if n is None or successes is None or not math.isfinite(n) or not math.isfinite(successes) or n < 1 \
            or not 0 <= successes <= n:
        return (math.nan, math.nan)
    interval = binomtest(int(round(successes)), int(n)).proportion_ci(confidence_level=0.95, method="wilson")
    return (100 * interval.low, 100 * interval.high)


def exp_t_interval(mean_log: float, stderr: float | None, n: int) -> tuple[float, float]:
    """95% interval for exp(mean) of n values whose mean and standard error are given: Student's t
    on the log scale, mapped through exp (asymmetric, as perplexity is)."""
    from scipy.stats import t

    if not n or n < 2 or stderr is None or not math.isfinite(stderr) or not math.isfinite(mean_log):
        return (math.nan, math.nan)
    half = t.ppf(0.975, n - 1) * stderr
    return (math.exp(mean_log - half), math.exp(mean_log + half))
