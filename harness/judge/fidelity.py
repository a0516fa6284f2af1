"""The fidelity verdict: does a simulated twin's metric land within its target of what the real run measured?

The real value is the median of the run's trials and `spread` is how far its furthest trial lies from that
median: the real run cannot place the truth closer than that. So, for a metric's relative error e:
- a median or throughput (target `tolerance`): with spread <= tolerance the point decides (holds when |e| is
  within the tolerance, else fails); with a wider spread the error's interval |e| +- spread decides
  (`verdict.decide`): it fails when even |e| - spread is beyond the tolerance, and otherwise the data cannot tell;
- a p99 (`within_spread=True`, issue 30's "within 20% or within the real run's spread"): holds when |e| is within
  the larger of the tolerance and the spread, else fails;
- no error (no data on either side): cannot tell;
- a suite's registered sensitivity rule (`[judge] tipping_elasticity = X`): a latency whose twins move by more than
  X times any move of the step price (|elasticity| > X, `harness.metrics.sensitivity`, measured at the fitted price)
  is on a tipping point: a price error within the machine's moment moves it beyond its tolerance, so its error
  measures where the tipping point lies, not the simulator. Such a metric cannot tell, whatever its error and
  spread: never holds, never fails. A latency whose elasticity could not be measured (its twins' median 0 or
  missing) cannot tell too: the rule cannot clear it. Without the rule (`tipping` None) nothing changes, and a
  throughput is never subject to it (`latency=False`).
"""

from __future__ import annotations

from collections.abc import Iterable

from harness.judge.verdict import Outcome, decide


def fidelity_outcome(
    error: float | None,
    spread: float | None,
    tolerance: float,
    *,
    within_spread: bool,
    elasticity: float | None = None,
    tipping: float | None = None,
    latency: bool = True,
) -> Outcome:
    if error is None or tipping_reason(elasticity, tipping, latency=latency):
        return "cannot_tell"
    size, spread = abs(error), spread or 0.0
    if within_spread:
        return "holds" if size <= max(tolerance, spread) else "fails"
    if spread <= tolerance:
        return "holds" if size <= tolerance else "fails"
    return decide(max(0.0, size - spread), size + spread, tolerance, higher_is_worse=True)


def tipping_reason(elasticity: float | None, tipping: float | None, *, latency: bool = True) -> str | None:
    """Why the registered sensitivity rule (the module's docstring) makes a metric cannot tell: |elasticity| beyond
    the suite's `tipping` ("on a tipping point: elasticity 17.6"), or a latency's elasticity not measured; None
    where it does not (no rule, not a latency, or within)."""
    if tipping is None or not latency:
        return None
    if elasticity is None:
        return "tipping rule: elasticity not measured"
    return f"on a tipping point: elasticity {elasticity:.1f}" if abs(elasticity) > tipping else None


def pair_outcome(outcomes: Iterable[str]) -> Outcome:
    """A pair's verdict from its metrics': fails when any fails, holds when all hold, else cannot tell."""
    seen = set(outcomes)
    return "fails" if "fails" in seen else "holds" if seen == {"holds"} else "cannot_tell"


def suite_outcome(counts: dict[str, int], need: int) -> str:
    """The suite's target, three ways: met when `need` pairs hold; not met when fewer than `need` could hold even
    if every pair that cannot tell held; otherwise (pairs unmeasured or unresolved decide it) cannot tell."""
    if counts["holds"] >= need:
        return "met"
    return "not met" if counts["holds"] + counts["cannot_tell"] < need else "cannot tell"
