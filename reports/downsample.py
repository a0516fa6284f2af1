"""How the heavy figures stay small: every figure draws a bounded number of points, whatever the run size.

- distributions (CDFs) are drawn through at most `CDF_POINTS` quantiles, evenly spaced in
  probability up to p90 and log-spaced in the tail (1 - p from 0.1 down to 1/n), so the p99.9 region
  keeps its shape; runs with fewer values than that are drawn exactly;
- time series are counted in at most `TIME_BINS` equal bins over the run;
- batch occupancy is the time-weighted mean of the step trace in each of at most `TIME_BINS` bins
  (a long trace is sampled, see `reports.steps`), plus a detail view of at most `DETAIL_STEPS` raw steps;
- the request timeline shows at most `GANTT_REQUESTS` consecutive requests.

`DOWNSAMPLING` says the same in words; the report prints it.
"""

from __future__ import annotations

import numpy as np

from harness.metrics.intervals import bin_counts
from reports.steps import FULL_READ_BYTES, SAMPLE_CHUNKS

CDF_POINTS = 400
TIME_BINS = 400
DETAIL_STEPS = 1500
GANTT_REQUESTS = 36

DOWNSAMPLING = (
    f"Each CDF is drawn through at most {CDF_POINTS} quantiles (even in probability up to p90, log-spaced "
    f"in the tail down to 1/n, so p99.9 keeps its shape; smaller samples are drawn exactly). Time series are "
    f"counted in at most {TIME_BINS} equal bins. Batch occupancy is the time-weighted mean of the step trace "
    f"per bin (traces over {FULL_READ_BYTES >> 20} MB are read as {SAMPLE_CHUNKS} evenly spaced runs of "
    f"consecutive steps), with a detail view of at most {DETAIL_STEPS} raw steps. The request timeline shows "
    f"{GANTT_REQUESTS} consecutive requests from the steady state. Histograms are counted before drawing. "
    "Tables and the verdict use every request."
)


def finite(values: np.ndarray) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def cdf_points(values: np.ndarray, max_points: int = CDF_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """(x, p) of the empirical CDF of the finite `values`, with at most about `max_points` points."""
    x = finite(values)
    n = x.size
    if n == 0:
        return np.empty(0), np.empty(0)
    if n <= max_points:
        return np.sort(x), np.arange(1, n + 1) / n
    body = np.linspace(0.0, 0.9, max_points // 2, endpoint=False)
    tail = 1.0 - np.logspace(-1.0, np.log10(1.0 / n), max_points - body.size)
    p = np.unique(np.concatenate([body, tail, [1.0]]))
    # unsorted: `np.quantile` partitions around the order statistics it reads (the same values a sort puts there)
    # in a third of a sort's time on a trace's millions of token gaps
    return np.quantile(x, p), p


def time_edges(start: float, end: float, bins: int = TIME_BINS) -> np.ndarray:
    end = end if end > start else start + 1e-9
    return np.linspace(start, end, bins + 1)


def rate_per_bin(times: np.ndarray, edges: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Events (or summed weights) per second in each bin."""
    if weights is None:  # counts: without a sort of the values (`bin_counts`)
        return bin_counts(finite(times), edges) / np.diff(edges)
    counts, _ = np.histogram(times, bins=edges, weights=weights)
    return counts / np.diff(edges)


def level_per_bin(up: np.ndarray, down: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted mean, per bin, of the number of intervals [up, down) open (e.g. requests queued)."""
    up, down = np.asarray(up, dtype=np.float64), np.asarray(down, dtype=np.float64)
    keep = np.isfinite(up) & np.isfinite(down) & (down > up)
    return step_mean_per_bin(
        np.concatenate([up[keep], down[keep]]), np.concatenate([np.ones(keep.sum()), -np.ones(keep.sum())]), edges
    )


def step_mean_per_bin(change_t: np.ndarray, change: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted bin means of the step function that jumps by `change` at `change_t` (0 before)."""
    order = np.argsort(change_t, kind="stable")
    t, level = change_t[order], np.cumsum(change[order])
    area = np.concatenate([[0.0], np.cumsum(level[:-1] * np.diff(t))]) if t.size else np.empty(0)
    return np.diff(_area_at(t, level, area, edges)) / np.diff(edges)


def _area_at(t: np.ndarray, level: np.ndarray, area: np.ndarray, at: np.ndarray) -> np.ndarray:
    """Integral of the step function from -inf to each `at` (value level[i] on [t[i], t[i+1]))."""
    if t.size == 0:
        return np.zeros(at.size)
    i = np.searchsorted(t, at, side="right") - 1
    inside = i >= 0
    j = np.maximum(i, 0)
    return np.where(inside, area[j] + level[j] * (at - t[j]), 0.0)


def steps_mean_per_bin(t_start: np.ndarray, t_end: np.ndarray, value: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """Time-weighted bin means of `value` held over each step [t_start, t_end), 0 between steps."""
    t = np.concatenate([t_start, t_end])
    change = np.concatenate([value, -value]).astype(np.float64)
    return step_mean_per_bin(t, change, edges)
