"""Exact binomial intervals, and the sample a class needs for one of a given width.

A class's precision is k correct labels of n reviewed. Its Clopper-Pearson interval is exact:
never narrower than the truth, whatever the precision. The plan sizes each class's sample so the
interval's half-width stays within the margin asked for, whatever k turns out to be.
"""

from __future__ import annotations

import numpy as np


def clopper_pearson(k: int | np.ndarray, n: int | np.ndarray, confidence: float) -> tuple:
    """The exact two-sided interval (low, high) for k successes of n trials."""
    from scipy.stats import beta  # here: `review status` and `review classes status` need no interval

    k, n = np.asarray(k, np.float64), np.asarray(n, np.float64)
    tail = (1 - confidence) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        low = np.where(k > 0, beta.ppf(tail, k, n - k + 1), 0.0)
        high = np.where(k < n, beta.ppf(1 - tail, k + 1, n - k), 1.0)
    return (float(low), float(high)) if low.ndim == 0 else (low, high)


def worst_half_width(n: int, confidence: float) -> float:
    """The widest half-width (high - low) / 2 over every k of n."""
    low, high = clopper_pearson(np.arange(n + 1), np.full(n + 1, n), confidence)
    return float(np.max(high - low) / 2)


def sample_size(margin: float, confidence: float) -> int:
    """The smallest n whose worst-case half-width is within `margin` (bisection: it falls with n)."""
    low, high = 1, 2
    while worst_half_width(high, confidence) > margin:
        low, high = high, high * 2
    while low < high:
        middle = (low + high) // 2
        if worst_half_width(middle, confidence) <= margin:
            high = middle
        else:
            low = middle + 1
    return high
