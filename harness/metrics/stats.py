"""Percentiles with seeded percentile-bootstrap confidence intervals.

A naive bootstrap of a quantile resamples all n values B times: for 100k requests (or the millions
of pooled inter-token gaps) and B = 1000 that is 1e8+ draws and sorts. We instead draw, for each
resample, only the few order statistics a quantile needs. If the sorted sample is x_(1..n), the
k-th smallest index of n uniform draws from {0..n-1} is floor(n * U_(k)) where U_(k) is the k-th
order statistic of n Uniform(0,1) variables, U_(k) ~ Beta(k, n-k+1), and U_(k') given U_(k) is
U_(k) + (1 - U_(k)) * Beta(k'-k, n-k'+1). Chaining these draws reproduces the joint distribution of
the needed order statistics of an ordinary with-replacement resample exactly, at O(B x Q) cost
after one sort. The CI is then the usual percentile-bootstrap interval of the resampled quantiles.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0, 99.9)
DEFAULT_N_BOOT = 1000
DEFAULT_CONFIDENCE = 0.95


def scipy_stats() -> Any:
    """`scipy.stats`, imported on first use: importing it is about a second of CPU (more where bytecode is not
    cached), which a run whose metrics test no hypothesis (one engine's run) need not pay."""
    from scipy import stats

    return stats


# The two quantiles a run's report asks for (a 95% interval: batch means over 20 sub-windows, and the Wilson
# score interval), as scipy.special gives them (tests/metrics/test_metrics_stats.py checks each bit for bit): a
# run whose report needs no other does not import scipy.special for them (0.15-0.2 s)
KNOWN_T_QUANTILES = {(0.975, 19): 2.0930240544083087}
KNOWN_NORMAL_QUANTILES = {0.975: 1.959963984540054}


def t_quantile(q: float, dof: float) -> float:
    """`scipy.stats.t.ppf(q, dof)` bit for bit (the special function it evaluates, at scale 1 and location 0),
    without importing scipy.stats (`scipy_stats`) but at the edges (q not inside (0, 1), dof not > 0), where
    scipy.stats gives the support's ends or NaN itself."""
    known = KNOWN_T_QUANTILES.get((q, dof))
    if known is not None:
        return known
    if not (0.0 < q < 1.0 and dof > 0):
        return float(scipy_stats().t.ppf(q, dof))
    from scipy.special import stdtrit

    return float(stdtrit(dof, q))


def normal_quantile(q: float) -> float:
    """`scipy.stats.norm.ppf(q)` bit for bit, as `t_quantile`."""
    known = KNOWN_NORMAL_QUANTILES.get(q)
    if known is not None:
        return known
    if not 0.0 < q < 1.0:
        return float(scipy_stats().norm.ppf(q))
    from scipy.special import ndtri

    return float(ndtri(q))


def percentile_label(q: float) -> str:
    """50 -> "p50", 99.9 -> "p99.9"."""
    return f"p{q:g}"


def _finite_sorted(values: Sequence[float] | np.ndarray | pd.Series) -> np.ndarray:
    x = np.asarray(values, dtype=np.float64).ravel()
    return np.sort(x[np.isfinite(x)])


def bootstrap_quantiles(sorted_x: np.ndarray, probs: np.ndarray, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates (n_boot x len(probs)) of `np.quantile(resample, probs)` (linear method).

    `sorted_x` must be sorted and finite. See the module docstring for why this is exact.
    """
    n = sorted_x.size
    probs = np.asarray(probs, dtype=np.float64)
    h = (n - 1) * probs
    lo = np.floor(h).astype(np.int64)
    frac = h - lo
    hi = np.minimum(lo + 1, n - 1)
    ranks = np.unique(np.concatenate([lo, hi])) + 1  # 1-based order-statistic ranks, ascending
    u = np.empty((n_boot, ranks.size))
    prev_rank, prev_u = 0, np.zeros(n_boot)
    for j, k in enumerate(ranks):
        step = rng.beta(k - prev_rank, n - k + 1, size=n_boot)
        prev_u = prev_u + (1.0 - prev_u) * step
        u[:, j] = prev_u
        prev_rank = int(k)
    idx = np.minimum(np.floor(n * u).astype(np.int64), n - 1)
    picked = sorted_x[idx]
    col_lo = np.searchsorted(ranks, lo + 1)
    col_hi = np.searchsorted(ranks, hi + 1)
    return picked[:, col_lo] + frac * (picked[:, col_hi] - picked[:, col_lo])


def percentiles(
    values: Sequence[float] | np.ndarray | pd.Series,
    qs: Sequence[float] = DEFAULT_PERCENTILES,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """Table indexed by "p50", "p90", ...: q, value, ci_low, ci_high, n.

    NaN and inf are dropped first (undefined metrics, e.g. TPOT of one-token outputs). With n = 0
    every cell is NaN; `n_boot = 0` skips the intervals.
    """
    return _sorted_percentiles(_finite_sorted(values), qs, n_boot, confidence, seed)


def _sorted_percentiles(x: np.ndarray, qs: Sequence[float], n_boot: int, confidence: float, seed: int) -> pd.DataFrame:
    """`percentiles` of `x`, already finite and sorted (`describe` has sorted it: a second sort of a trace's
    millions of token gaps cost as much as the first)."""
    q = np.asarray(qs, dtype=np.float64)
    table = pd.DataFrame(
        {"q": q, "value": np.nan, "ci_low": np.nan, "ci_high": np.nan, "n": x.size},
        index=pd.Index([percentile_label(v) for v in q], name="percentile"),
    )
    if x.size == 0:
        return table
    table["value"] = np.quantile(x, q / 100.0)
    if n_boot > 0:
        rng = np.random.default_rng(seed)
        boot = bootstrap_quantiles(x, q / 100.0, n_boot, rng)
        alpha = 1.0 - confidence
        table["ci_low"], table["ci_high"] = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
    return table


def bootstrap_ci(
    values: Sequence[float] | np.ndarray | pd.Series,
    statistic: Callable[..., np.ndarray] = np.mean,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    max_chunk_elements: int = 4_000_000,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of any `statistic(array, axis=-1)` (e.g. `np.mean`), by plain resampling.

    Resamples are drawn in chunks so memory stays bounded; use `percentiles` for quantiles, which
    is far cheaper on large samples.
    """
    x = np.asarray(values, dtype=np.float64).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0 or n_boot <= 0:
        return (float("nan"), float("nan"))
    rng = np.random.default_rng(seed)
    chunk = max(1, max_chunk_elements // x.size)
    stats = np.empty(n_boot)
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        idx = rng.integers(0, x.size, size=(stop - start, x.size))
        stats[start:stop] = statistic(x[idx], axis=-1)
    alpha = 1.0 - confidence
    low, high = np.quantile(stats, [alpha / 2, 1 - alpha / 2])
    return (float(low), float(high))


def _finite_sorted_with(
    values: Sequence[float] | np.ndarray | pd.Series, censored: Sequence[bool] | np.ndarray | pd.Series | None
) -> tuple[np.ndarray, np.ndarray]:
    raw = np.asarray(values, dtype=np.float64).ravel()
    flags = np.zeros(raw.size, dtype=bool) if censored is None else np.asarray(censored, dtype=bool).ravel()
    keep = np.isfinite(raw)
    x, flags = raw[keep], flags[keep]
    if not flags.any():  # nothing to carry along: a plain sort (a trace's millions of token gaps in half the time)
        return np.sort(x), flags
    order = np.argsort(x, kind="stable")
    return x[order], flags[order]


def censored_reaches(
    values: Sequence[float] | np.ndarray, censored: Sequence[bool] | np.ndarray | None, probs: Sequence[float]
) -> list[bool]:
    """For each quantile (probs in [0, 1]; linear interpolation) of `values`, whether a censored value
    (a lower bound) reaches it, so that the quantile is only a lower bound too. Exact otherwise: raising
    a value that lies below the order statistics a quantile is interpolated from only shifts them up,
    and one above them does not move them."""
    if censored is None or not np.any(censored):  # before sorting: most samples have nothing censored
        return [False] * len(probs)
    return _sorted_reaches(*_finite_sorted_with(values, censored), probs)


def _sorted_reaches(x: np.ndarray, flags: np.ndarray, probs: Sequence[float]) -> list[bool]:
    """`censored_reaches` of `x`, finite and sorted, with `flags` in the same order."""
    if x.size == 0 or not flags.any():
        return [False] * len(probs)
    first_censored = float(x[flags].min())
    upper = np.ceil((x.size - 1) * np.asarray(probs, dtype=np.float64)).astype(np.int64)
    return [bool(first_censored <= x[i]) for i in upper]


def describe(
    values: Sequence[float] | np.ndarray | pd.Series,
    qs: Sequence[float] = DEFAULT_PERCENTILES,
    *,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
    censored: Sequence[bool] | np.ndarray | pd.Series | None = None,
) -> dict[str, object]:
    """count, mean, min, max and {"p50": {"value", "ci_low", "ci_high", "lower_bound"}, ...} as plain Python.

    `censored` marks values that are only lower bounds (a request cut off while it waited: its true value
    is at least this). They stay in the sample at their bound, so every quantile is a valid lower bound of
    the true one, and it is exact when no censored value lies at or below the order statistics it is
    interpolated from (raising a value below them only shifts them up). A quantile that a censored value
    reaches is marked `lower_bound`, and its `ci_high` is None: its upper end is unknown. "mean" is None
    when any value is censored, for the same reason.
    """
    x, flags = _finite_sorted_with(values, censored)
    table = _sorted_percentiles(x, qs, n_boot, confidence, seed)
    empty = x.size == 0
    bounded = _sorted_reaches(x, flags, table["q"].to_numpy() / 100.0)
    return {
        "count": int(x.size),
        "censored": int(flags.sum()),
        "mean": None if empty or flags.any() else float(x.mean()),
        "min": None if empty else float(x[0]),
        "max": None if empty else float(x[-1]),
        "percentiles": {
            label: {
                "value": _py(row.value),
                "ci_low": _py(row.ci_low),
                "ci_high": None if bound else _py(row.ci_high),
                "lower_bound": bound,
            }
            for (label, row), bound in zip(table.iterrows(), bounded, strict=True)
        },
    }


def _py(v: float) -> float | None:
    return None if not np.isfinite(v) else float(v)
