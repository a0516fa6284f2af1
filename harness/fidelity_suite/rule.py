"""What the plain and the at-trial-speed verdicts share: the metrics judged by the p99 rule, the twin simulation
they are given, and one metric's verdict under the suite's targets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.fidelity_suite.spec import Targets
from harness.judge.fidelity import Outcome, fidelity_outcome

P99 = ("TTFT p99", "TPOT p99", "E2E p99")  # judged by the p99 rule (harness/judge/fidelity.py)


# (run dir, engine description, profile, noise=, seed=, described=, headline=, step_scale=) -> the twin's summary:
# `harness.cli.sim.simulate_twin`
Simulate = Callable[..., dict[str, Any]]


def metric_outcome(metric: str, error: float | None, spread: float | None, targets: Targets) -> Outcome:
    """One metric's verdict: a p99 within the larger of its tolerance and the spread, the rest by their interval
    (`harness.judge.fidelity.fidelity_outcome`)."""
    p99 = metric in P99
    tolerance = targets.p99_tolerance if p99 else targets.median_tolerance
    return fidelity_outcome(error, spread, tolerance, within_spread=p99)
