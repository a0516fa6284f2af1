"""A number with its 95% confidence interval, and the two intervals the report's headlines use besides the
summary's percentile bootstrap: a batch-means interval on a rate, a Wilson score interval on a share.

Batch means: the steady window cut into `BATCHES` equal sub-windows, Student t over the sub-window rates
(events in one sub-window are correlated with the next only through the engine's state, which the
sub-window length averages out).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from harness.metrics.stats import normal_quantile, t_quantile

BATCHES = 20
CONFIDENCE = 0.95


def _missing(v: float | None) -> bool:
    return v is None or not math.isfinite(v)


@dataclass
class Estimate:
    """A number with its confidence interval, when it has one."""

    value: float | None
    low: float | None = None
    high: float | None = None
    reason: str | None = None  # why value is None, when it is undefined rather than unknown
    at_least: bool = False  # a lower bound: requests cut off while waiting reach it (its `high` is unknown)
    extreme_of: int | None = None  # a percentile of this few values is about their extreme: no interval

    @property
    def known(self) -> bool:
        return not _missing(self.value)

    @property
    def has_ci(self) -> bool:
        return not (_missing(self.low) or _missing(self.high))

    def beaten_by(self, high: float) -> bool:
        """Whether a value below `high` is clearly lower than this one (a lower bound needs only its low end)."""
        return self.low is not None and not _missing(self.low) and high < self.low and (self.at_least or self.has_ci)


def wilson(successes: int, n: int, confidence: float = CONFIDENCE) -> Estimate:
    """The share successes / n with its Wilson score interval (no value without trials)."""
    if n <= 0:
        return Estimate(None)
    z = normal_quantile(0.5 + confidence / 2)
    p = successes / n
    denom = 1 + z**2 / n
    center = (p + z**2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z**2 / (4 * n * n)) / denom
    return Estimate(p, max(0.0, center - half), min(1.0, center + half))


def bin_counts(values: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """`np.histogram(values, bins=edges)[0]`, the same counts; where `edges` are `np.linspace` of their two ends
    (every caller's), by numpy's equal-bin path: the same `linspace` edges, each value checked against them, but
    no sort of the values (a trace's millions of token times sorted for 20 bins cost a tenth of a second)."""
    edges = np.asarray(edges)
    if (
        edges.dtype == np.float64
        and edges.size > 1
        and np.array_equal(edges, np.linspace(edges[0], edges[-1], edges.size))
    ):
        return np.histogram(values, bins=edges.size - 1, range=(edges[0], edges[-1]))[0]
    return np.histogram(values, bins=edges)[0]


def batch_means(times: np.ndarray, start: float, end: float, batches: int = BATCHES) -> Estimate:
    """Events per second in [start, end] with a batch-means 95% interval (cut at zero: a rate is never negative)."""
    if not (end > start) or times.size == 0:
        return Estimate(None)
    edges = np.linspace(start, end, batches + 1)
    counts = bin_counts(times[(times >= start) & (times <= end)], edges)
    rates = counts / np.diff(edges)
    mean, sd = float(rates.mean()), float(rates.std(ddof=1))
    half = t_quantile(0.5 + CONFIDENCE / 2, batches - 1) * sd / math.sqrt(batches)
    return Estimate(mean, max(mean - half, 0.0), mean + half)
