"""The statistics of every comparison: the gate's one-sided tests, the comparison table's two-sided ones
(harness.judge.comparison), and the one multiplicity correction (Holm).

For the gate: is the candidate worse than the baseline, beyond chance?

`worse` names the direction of a regression: "greater" when a higher candidate value is worse (latency,
error rate), "less" when a lower one is (throughput, goodput). Every p-value here is one-sided: it is
the chance of evidence at least this strong for a regression if there were none.

- Rank tests for the bulk of a distribution: Wilcoxon signed-rank on per-request deltas when the runs
  replayed the identical schedule (pairing removes request-to-request variation), Mann-Whitney U
  otherwise.
- Bootstrap for a statistic itself (a tail percentile can regress through a few requests a rank test
  barely sees): resample requests (jointly when paired), recompute the statistic on both sides, and read
  the p-value and the interval off the replicates of the change.
- Exact tests for proportions: McNemar's (a binomial test on the discordant pairs) when paired,
  Fisher's otherwise; a binomial test against an absolute limit.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from harness.metrics.stats import bootstrap_ci, bootstrap_quantiles, scipy_stats

Side = Literal["greater", "less"]
MAX_CHUNK_ELEMENTS = 4_000_000  # bounds the memory of a joint bootstrap of large runs
EXACT_SIGNED_RANK_MAX_N = 16  # 2**16 sign patterns: exact and still a few milliseconds
TRIAL_CONFIDENCE = 0.95  # a study's interval over trials: each end a one-sided 97.5% bound


@dataclass(frozen=True)
class TestResult:
    """A significance test's name and one-sided p-value."""

    test: str
    p_value: float


def holm(p: np.ndarray) -> np.ndarray:
    """Holm-Bonferroni adjusted p-values (NaN stays NaN): the one multiplicity correction, for the several
    metrics of one comparison."""
    p = np.asarray(p, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if ok.size == 0:
        return out
    order = ok[np.argsort(p[ok])]
    m = ok.size
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def two_sided_signed_rank(d: np.ndarray) -> tuple[float, float]:
    """Wilcoxon signed-rank statistic and two-sided p-value of per-request differences (NaN when empty)."""
    if d.size == 0:
        return np.nan, np.nan
    if not np.any(d):
        return 0.0, 1.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = scipy_stats().wilcoxon(d)
    return float(res.statistic), float(res.pvalue)


def stat_value(x: np.ndarray, stat: str) -> float:
    """`stat` is "mean" or "pQ" (linear interpolation, as everywhere in harness.metrics)."""
    if x.size == 0:
        return float("nan")
    return float(x.mean()) if stat == "mean" else float(np.quantile(x, float(stat[1:]) / 100.0))


def _stat_rows(m: np.ndarray, stat: str) -> np.ndarray:
    return m.mean(axis=1) if stat == "mean" else np.quantile(m, float(stat[1:]) / 100.0, axis=1)


def rank_test(a: np.ndarray, b: np.ndarray, *, paired: bool, worse: Side) -> TestResult:
    """Wilcoxon signed-rank on b - a (paired) or Mann-Whitney U of b against a: is b shifted `worse`?"""
    if paired:
        return TestResult("wilcoxon", signed_rank_p(b - a, worse))
    return TestResult("mann-whitney", float(scipy_stats().mannwhitneyu(b, a, alternative=worse).pvalue))


def signed_rank_p(d: np.ndarray, worse: Side) -> float:
    """One-sided Wilcoxon signed-rank p-value of the deltas `d` (zeros dropped, tied ranks averaged).

    Small samples (window slices) get the exact distribution by enumerating every sign pattern, which
    stays exact with ties; scipy would fall back to a slow random permutation there. Larger ones use
    the normal approximation with the tie correction.
    """
    d = d[d != 0]
    if d.size == 0:
        return 1.0  # identical values are no evidence of anything
    if d.size > EXACT_SIGNED_RANK_MAX_N:
        ties = np.unique(np.abs(d)).size < d.size
        method = "exact" if d.size <= 50 and not ties else "asymptotic"  # scipy's exact table assumes no ties
        return float(scipy_stats().wilcoxon(d, alternative=worse, method=method).pvalue)
    ranks = scipy_stats().rankdata(np.abs(d))
    observed = ranks[d > 0].sum()
    signs = (np.arange(2**d.size)[:, None] >> np.arange(d.size)) & 1  # every subset of positive deltas
    null = signs @ ranks
    eps = 1e-9 * ranks.sum()  # tied rank sums are equal up to float rounding
    hits = np.sum(null >= observed - eps) if worse == "greater" else np.sum(null <= observed + eps)
    return float(hits / null.size)


def bootstrap_stat(
    a: np.ndarray, b: np.ndarray, stat: str, *, paired: bool, n_boot: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap replicates of `stat` on each side: resampled jointly when paired, independently otherwise."""
    if paired:
        chunk = max(1, MAX_CHUNK_ELEMENTS // max(a.size, 1))
        sa, sb = np.empty(n_boot), np.empty(n_boot)
        for start in range(0, n_boot, chunk):
            stop = min(n_boot, start + chunk)
            idx = rng.integers(0, a.size, size=(stop - start, a.size))
            sa[start:stop], sb[start:stop] = _stat_rows(a[idx], stat), _stat_rows(b[idx], stat)
        return sa, sb
    return bootstrap_one(a, stat, n_boot, rng), bootstrap_one(b, stat, n_boot, rng)


def bootstrap_one(x: np.ndarray, stat: str, n_boot: int, rng: np.random.Generator) -> np.ndarray:
    """Bootstrap replicates of `stat` of one sample."""
    if stat != "mean":  # exact order-statistic draws: no n x B resample matrix (harness.metrics.stats)
        return bootstrap_quantiles(np.sort(x), np.array([float(stat[1:]) / 100.0]), n_boot, rng)[:, 0]
    out = np.empty(n_boot)
    chunk = max(1, MAX_CHUNK_ELEMENTS // max(x.size, 1))
    for start in range(0, n_boot, chunk):
        stop = min(n_boot, start + chunk)
        out[start:stop] = x[rng.integers(0, x.size, size=(stop - start, x.size))].mean(axis=1)
    return out


def quantile_test(a: np.ndarray, b: np.ndarray, q: float, *, paired: bool, worse: Side) -> TestResult:
    """Mood's quantile test: do more of b's values than a's lie beyond the pooled q-quantile (in the worse
    direction)? Exact (McNemar or Fisher on the indicators) and conservative; used where the tail is too
    thin for the bootstrap, where it honestly finds little evidence either way."""
    cut = float(np.quantile(np.concatenate([a, b]), q))
    xa, xb = (a > cut, b > cut) if worse == "greater" else (a < cut, b < cut)
    result = proportion_test(xa, xb, paired=paired, worse="greater")
    return TestResult(f"quantile ({result.test})", result.p_value)


def bootstrap_p(delta: np.ndarray, worse: Side) -> float:
    """Share of replicates of (candidate - baseline) that show no regression, with the +1 correction that
    keeps a finite bootstrap from claiming p = 0."""
    no_regression = np.sum(delta <= 0) if worse == "greater" else np.sum(delta >= 0)
    return float((no_regression + 1) / (delta.size + 1))


def interval(replicates: np.ndarray, alpha: float) -> tuple[float, float]:
    """Two-sided (1 - 2 alpha) percentile interval: each end is a one-sided (1 - alpha) bound, matching the
    one-sided tests at level alpha."""
    r = replicates[np.isfinite(replicates)]
    if r.size == 0:
        return float("nan"), float("nan")
    low, high = np.quantile(r, [alpha, 1.0 - alpha])
    return float(low), float(high)


IDENTICAL_TRIALS = (
    "the trials are identical copies (a deterministic engine such as the simulator, or the same seed): "
    "the interval shows no run-to-run noise, so the outcome is a fact of these runs, not a margin over noise"
)


def identical_trials(*sides: Sequence[float]) -> bool:
    """Whether every side holds two or more trials, each side one value repeated exactly: an interval over
    them has zero width because nothing varied, not because the estimate is certain."""
    arrays = [np.asarray(side, dtype=np.float64) for side in sides]
    return bool(arrays) and all(a.size >= 2 and bool(np.all(a == a[0])) for a in arrays)


def trial_mean_interval(
    values: list[float], *, confidence: float = TRIAL_CONFIDENCE, n_boot: int = 2000, seed: int = 0
) -> tuple[float | None, float | None]:
    """Bootstrap interval of the mean over trials (a study arm's value, or its per-trial changes); None
    for fewer than two trials, which have no interval, so a claim on them cannot be told."""
    if len(values) < 2:
        return None, None
    low, high = bootstrap_ci(np.asarray(values), np.mean, n_boot=n_boot, confidence=confidence, seed=seed)
    return float(low), float(high)


def change(base: float, cand: float, relative: bool) -> float:
    """cand / base - 1 (0 when both are 0, inf when only the baseline is) or cand - base."""
    if not relative:
        return cand - base
    if base == 0:
        return 0.0 if cand == 0 else float(np.sign(cand)) * float("inf")
    return cand / base - 1.0


def change_replicates(sa: np.ndarray, sb: np.ndarray, relative: bool) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return sb / sa - 1.0 if relative else sb - sa


def proportion_test(xa: np.ndarray, xb: np.ndarray, *, paired: bool, worse: Side) -> TestResult:
    """Is the share of True in xb `worse` than in xa? McNemar's exact test when paired, else Fisher's."""
    if paired:
        b_only = int(np.sum(xb & ~xa))  # the event happened in the candidate only
        a_only = int(np.sum(xa & ~xb))
        hits = b_only if worse == "greater" else a_only
        if b_only + a_only == 0:
            return TestResult("mcnemar", 1.0)
        test = scipy_stats().binomtest(hits, b_only + a_only, 0.5, alternative="greater")
        return TestResult("mcnemar", float(test.pvalue))
    kb, ka = int(xb.sum()), int(xa.sum())
    table = [[kb, xb.size - kb], [ka, xa.size - ka]]
    return TestResult("fisher", float(scipy_stats().fisher_exact(table, alternative=worse).pvalue))


def limit_test_quantile(x: np.ndarray, q: float, limit: float, worse: Side) -> TestResult:
    """Exact binomial test that the true q-quantile is past `limit`: if it were not, at most a share 1 - q of
    values could exceed the limit (q below it, for a lower bound)."""
    if worse == "greater":
        k, share = int(np.sum(x > limit)), 1.0 - q
    else:
        k, share = int(np.sum(x < limit)), q
    return TestResult("binomial", float(scipy_stats().binomtest(k, x.size, share, alternative="greater").pvalue))


def quantile_bounds(x: np.ndarray, q: float, alpha: float) -> tuple[float, float]:
    """Distribution-free one-sided (1 - alpha) bounds of the q-quantile from order statistics: X_(j) lies
    below it with probability P(Binomial(n, q) >= j). An end the sample cannot bound is infinite (the
    upper bound of p99 from fewer than about 300 values)."""
    xs, n = np.sort(x), x.size
    j = int(scipy_stats().binom.ppf(alpha, n, q))  # P(Bin <= j - 1) < alpha
    u = int(scipy_stats().binom.ppf(1.0 - alpha, n, q)) + 1  # P(Bin <= u - 1) >= 1 - alpha
    low = float(xs[j - 1]) if j >= 1 else float("-inf")
    high = float(xs[u - 1]) if u <= n else float("inf")
    return low, high


def share_bounds(k: int, n: int, alpha: float) -> tuple[float, float]:
    """Exact (Clopper-Pearson) one-sided (1 - alpha) bounds of a share from k events in n: no errors in 16
    requests bounds the error rate by 17%, not 0%."""
    ci = scipy_stats().binomtest(k, n).proportion_ci(1.0 - 2.0 * alpha, method="exact")
    return float(ci.low), float(ci.high)


def limit_test_mean(x: np.ndarray, limit: float, worse: Side, *, n_boot: int, rng: np.random.Generator) -> TestResult:
    means = bootstrap_one(x, "mean", n_boot, rng)
    return TestResult("bootstrap", bootstrap_p(means - limit, worse))


def limit_test_share(k: int, n: int, limit: float, worse: Side) -> TestResult:
    """Exact binomial test of k events in n against a share of `limit`."""
    test = scipy_stats().binomtest(k, n, min(max(limit, 0.0), 1.0), alternative=worse)
    return TestResult("binomial", float(test.pvalue))


def limit_test_rates(rates: np.ndarray, limit: float, worse: Side) -> TestResult:
    """One-sample Wilcoxon signed-rank of the per-slice rates against the limit."""
    return TestResult("wilcoxon", signed_rank_p(rates - limit, worse))
