"""Trials as the unit of noise, when both runs hold several.

Requests of one run share that run's conditions: other jobs on the machine, the core the engine thread
landed on, the state of caches. Two identical back-to-back runs on a shared 2-core machine differed by
5-10% in median TPOT with every request moving together. A per-request test cannot see a shift that
all requests share, so it calls run-to-run noise significant (the A/A false-alarm rate was 15% at
alpha 0.05). With several trials per side the gate therefore computes each rule's statistic once per
trial and tests the trials: a one-sided t-test on the per-trial changes, paired by trial when trial k
replayed the same schedule on both sides (log ratios for relative thresholds, differences for deltas),
Welch's t-test otherwise. Its degrees of freedom come from the trials, so its power does too: give a
CI gate eight or more trials per side.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from harness.judge.tests import Side, identical_trials


@dataclass(frozen=True)
class TrialComparison:
    """The change between two sides judged over whole trials: its size, interval, test and noise."""

    change: float  # relative: geometric mean of per-trial ratios - 1; delta: mean per-trial difference
    ci_low: float  # each end a one-sided (1 - alpha) bound, as the gate's other intervals
    ci_high: float
    p_value: float
    test: str
    trial_sd: float  # of one trial's change, on the tested scale (log for relative rules): the run-to-run noise
    identical: bool = False  # each side's trials one value repeated: a zero-width interval, not certainty


def use_trials(mode: str, trials_a: list[int], trials_b: list[int], min_trials: int) -> bool:
    if mode == "request":
        return False
    return min(len(trials_a), len(trials_b)) >= (2 if mode == "trial" else min_trials)


def compare_trials(
    a: np.ndarray, b: np.ndarray, *, relative: bool, paired: bool, worse: Side, alpha: float, what: str
) -> TrialComparison | None:
    """Per-trial statistics `a` (baseline) and `b` (candidate), index-aligned by trial when `paired`."""
    keep_a, keep_b = np.isfinite(a), np.isfinite(b)
    if paired:
        keep_a = keep_b = keep_a & keep_b
    a, b = a[keep_a], b[keep_b]
    if min(a.size, b.size) < 2:
        return None
    if relative and not (np.all(a > 0) and np.all(b > 0)):
        # a zero (no errors, no goodput) has no log ratio: test the differences, scaled by the baseline's mean
        diff = compare_trials(a, b, relative=False, paired=paired, worse=worse, alpha=alpha, what=what)
        assert diff is not None
        scale = float(a.mean())
        if scale <= 0:
            edge = 0.0 if diff.change == 0 else float(np.sign(diff.change)) * float("inf")
            return TrialComparison(edge, edge, edge, diff.p_value, diff.test, diff.trial_sd, diff.identical)
        return TrialComparison(
            diff.change / scale,
            diff.ci_low / scale,
            diff.ci_high / scale,
            diff.p_value,
            diff.test,
            diff.trial_sd / scale,
            diff.identical,
        )
    xa, xb = (np.log(a), np.log(b)) if relative else (a, b)
    if paired:
        d = xb - xa
        trial_sd = float(d.std(ddof=1))
        mean, se, df = float(d.mean()), trial_sd / np.sqrt(d.size), float(d.size - 1)
        name = f"paired t-test on {d.size} trials' {what}"
    else:
        trial_sd = float(np.sqrt(xa.var(ddof=1) + xb.var(ddof=1)))  # of one candidate trial minus one baseline
        va, vb = xa.var(ddof=1) / xa.size, xb.var(ddof=1) / xb.size
        mean, se = float(xb.mean() - xa.mean()), float(np.sqrt(va + vb))
        df = float((va + vb) ** 2 / (va**2 / (xa.size - 1) + vb**2 / (xb.size - 1))) if va + vb > 0 else 1.0
        name = f"Welch t-test on {xa.size} + {xb.size} trials' {what}"
    sign = 1.0 if worse == "greater" else -1.0
    if se <= 1e-12 * abs(mean):  # every trial moved by the same amount (up to rounding): no noise to weigh it against
        p = 0.0 if sign * mean > 0 else 1.0
        low = high = mean
    else:
        p = float(stats.t.sf(sign * mean / se, df))
        margin = float(stats.t.ppf(1.0 - alpha, df)) * se
        low, high = mean - margin, mean + margin
    back = (lambda x: float(np.expm1(x))) if relative else float
    return TrialComparison(back(mean), back(low), back(high), p, name, trial_sd, identical_trials(a, b))
