"""What the plain and the at-trial-speed verdicts share: the metrics judged by the p99 rule, the twin simulation
they are given, and one metric's verdict under the suite's targets."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from harness.fidelity_suite.spec import Targets, Tipping
from harness.judge.fidelity import Outcome, fidelity_outcome, tipping_reason
from harness.metrics.sensitivity import LATENCY

LATENCY_NAMES = frozenset(m.name for m in LATENCY)  # the metrics the tipping rule judges (not throughput)
P99 = ("TTFT p99", "TPOT p99", "E2E p99")  # judged by the p99 rule (harness/judge/fidelity.py)


# (run dir, engine description, profile, noise=, seed=, described=, headline=, step_scale=, step_scale_shapes=) -> the
# twin's summary:
# `harness.cli.sim.simulate_twin`
Simulate = Callable[..., dict[str, Any]]


def verdict_fields(
    metric: str,
    error: float | None,
    spread: float | None,
    targets: Targets,
    tipping: Tipping | None = None,
    elasticity: float | None = None,
) -> dict[str, Any]:
    """One metric's `verdict`: a p99 within the larger of its tolerance and the spread, the rest by their interval;
    with the suite's tipping rule, cannot tell beyond its elasticity, and then `why`
    (`harness.judge.fidelity.fidelity_outcome`). `elasticity`: the metric's twins' elasticity to the step price at
    the fitted price (None: not measured)."""
    p99 = metric in P99
    tolerance = targets.p99_tolerance if p99 else targets.median_tolerance
    limit = tipping.elasticity if tipping else None
    latency = metric in LATENCY_NAMES
    outcome: Outcome = fidelity_outcome(
        error, spread, tolerance, within_spread=p99, elasticity=elasticity, tipping=limit, latency=latency
    )
    fields: dict[str, Any] = {"verdict": outcome}
    why = tipping_reason(elasticity, limit, latency=latency)
    if why:
        fields["why"] = why
    return fields


def elasticities(block: dict[str, Any] | None) -> dict[str, float | None]:
    """Each latency's elasticity from a sensitivity block (`harness.metrics.sensitivity`); {} without one."""
    return {m["metric"]: m["elasticity"] for m in (block or {}).get("metrics", [])}
