"""The decision: does a change hold within its tolerance, break it, or can the data not tell?

Decided on the interval of the change (each end a one-sided (1 - alpha) bound), never on the point
estimate alone: a claim *holds* when the interval's worse end is inside the tolerance, *fails* when its
better end is outside, and otherwise the data *cannot tell*, with how many samples (trials or requests)
would decide it if the change and the noise stay as observed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal

import numpy as np

from harness.metrics.stats import scipy_stats

Outcome = Literal["holds", "fails", "cannot_tell"]

# A percentile with fewer than this many values beyond it is the sample's extreme: its bootstrap is a
# handful of atoms and A/A tests reject far too often (measured: 12% at alpha 0.05 for p99 of 60 paired
# values, 9% for p99.9 of 500); from two values beyond it the level holds. p99 needs 200 values a side.
MIN_TAIL_VALUES = 2.0
DECIDE_POWER = 0.8  # "would need N": the samples that decide the claim 4 times in 5 at the observed change
MOST_SAMPLES = 1_000_000
_SEARCH_BLOCK = 128  # trial counts searched per call: most answers are a few to a few dozen trials


def tail_is_resolved(n: int, q: float) -> bool:
    """Whether n values hold enough of the tail beyond quantile q (q in (0, 1)) to resolve it."""
    return n * min(q, 1.0 - q) >= MIN_TAIL_VALUES


def values_to_resolve(q: float) -> int:
    """Fewest values a side for quantile q to be resolved (p99: 200)."""
    return math.ceil(MIN_TAIL_VALUES / min(q, 1.0 - q) - 1e-9)


def decide(low: float, high: float, tolerance: float, *, higher_is_worse: bool) -> Outcome:
    """`low`..`high` bound the change; the claim is "change <= tolerance" (or >= when lower is worse)."""
    if math.isnan(low) or math.isnan(high):
        return "cannot_tell"
    worse, better = (high, low) if higher_is_worse else (low, high)
    inside = (lambda x: x <= tolerance) if higher_is_worse else (lambda x: x >= tolerance)
    if inside(worse):
        return "holds"
    if not inside(better):
        return "fails"
    return "cannot_tell"


def samples_needed(sd: float, gap: float, alpha: float, *, small: bool, power: float = DECIDE_POWER) -> int | None:
    """Fewest samples a side for a one-sided (1 - alpha) bound to clear the tolerance `gap` away from the
    estimate with probability `power`, when one sample's change has standard deviation `sd`.

    `small` (trials): Student's t with n - 1 degrees of freedom, through the noncentral t; else (requests)
    the normal approximation. None when the estimate sits on the tolerance or no noise was seen.
    """
    gap = abs(gap)
    if not (np.isfinite(sd) and sd > 0 and np.isfinite(gap) and gap > 0):
        return None
    z = scipy_stats().norm.ppf(1.0 - alpha) + scipy_stats().norm.ppf(power)
    normal = math.ceil((z * sd / gap) ** 2)
    if normal > MOST_SAMPLES:
        return None
    if not small or normal > 1000:
        return max(normal, 2)
    # the first n whose power reaches `power`, searched in blocks: one vectorised call per block gives each n
    # the very value a call of its own would (the same ufuncs), for a 250th of the cost per n
    for start in range(2, MOST_SAMPLES, _SEARCH_BLOCK):
        n = np.arange(start, min(start + _SEARCH_BLOCK, MOST_SAMPLES))
        reached = scipy_stats().nct.sf(scipy_stats().t.ppf(1.0 - alpha, n - 1), n - 1, gap / (sd / np.sqrt(n))) >= power
        if reached.any():
            return int(n[reached.argmax()])
    return None


TOO_FEW_TRIALS = "needs at least 2 trials to estimate noise"  # one trial has no spread to size anything from


def trials_to_decide(per_trial: Sequence[float], tolerance: float, alpha: float) -> int | None:
    """Trials a side that would decide "the mean of `per_trial` against `tolerance`" if its mean and its
    trial-to-trial spread stay as observed: `samples_needed` on trials (Student's t), as the gate sizes its
    trial rules. None below two trials, with no spread, or with the mean on the tolerance."""
    x = np.asarray(per_trial, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size < 2:
        return None
    return samples_needed(float(x.std(ddof=1)), tolerance - float(x.mean()), alpha, small=True)


def trials_needed_words(per_trial: Sequence[float], tolerance: float, alpha: float, side: str = "side") -> str:
    """What a claim the data cannot tell would need, in words: trials per `side`, or why no number."""
    if sum(1 for v in per_trial if math.isfinite(v)) < 2:
        return TOO_FEW_TRIALS
    n = trials_to_decide(per_trial, tolerance, alpha)
    return f"about {n} trials per {side} would decide it" if n else "more trials than is practical would decide it"
