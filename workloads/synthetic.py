"""Synthetic workloads: one or more tenants, each with its own rate, arrival process, lengths and priority.

Each tenant draws from its own seeded stream, so adding a tenant does not change the requests of the others.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
import pandas as pd

from workloads.arrivals import ArrivalProcess, arrival_times, exact_rate
from workloads.errors import WorkloadError
from workloads.frame import make_frame, sort_by_arrival
from workloads.lengths import LengthDist

TENANT_STREAM = 1000  # seed-sequence offsets keep tenant streams apart from transform streams
CLOSED_LOOP_STREAM = 999
PHASE_STREAM = 1  # a tenant's phase is drawn from its own child stream, so its requests do not change


@dataclass(frozen=True)
class TenantSpec:
    """One synthetic tenant: its rate, arrival process, length distributions and priority."""

    name: str
    rate: float  # requests per second (a weight when the workload is a closed loop)
    input: LengthDist
    output: LengthDist
    arrival: ArrivalProcess = field(default_factory=ArrivalProcess)
    priority: int = 0
    start_s: float = 0.0
    requests: int | None = None  # this tenant stops after that many
    reasoning: LengthDist | None = None  # spec key `reasoning_tokens`: the leading reasoning tokens of each output
    slo_class: str | None = None  # the SLO class of its requests (spec key `slo_class`); None: classed by its name

    def to_spec(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "rate": self.rate,
            "arrival": self.arrival.to_spec(),
            "priority": self.priority,
            "start_s": self.start_s,
            "requests": self.requests,
            "input": self.input.to_spec(),
            "output": self.output.to_spec(),
            # only when set, so the specs (and fingerprints) of workloads without reasoning stay as they were
            **({"reasoning_tokens": self.reasoning.to_spec()} if self.reasoning is not None else {}),
            **({"slo_class": self.slo_class} if self.slo_class is not None else {}),
        }


def scale_rates(tenants: Sequence[TenantSpec], total_rate: float) -> tuple[TenantSpec, ...]:
    """Tenants with their rates scaled to sum to `total_rate`, keeping each tenant's share of the load."""
    factor = total_rate / sum(t.rate for t in tenants)
    return tuple(replace(t, rate=t.rate * factor) for t in tenants)


def _tenant_frame(t: TenantSpec, times: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = len(times)
    frame = make_frame(times, t.input.sample(rng, n), t.output.sample(rng, n), tenant=t.name, priority=t.priority)
    if t.reasoning is not None:  # drawn after the lengths, so a tenant's other draws do not change
        frame["reasoning_tokens"] = t.reasoning.sample(rng, n)
    if t.slo_class is not None:
        frame["slo_class"] = t.slo_class
    return frame


def phases(tenants: Sequence[TenantSpec], seed: int) -> list[float]:
    """Each tenant's first arrival after its start: one of its own inter-arrival gaps, as if its stream had
    been running before the workload began (for Poisson, exactly the stationary wait), then shifted so that
    the first of them arrives at the start itself: a workload starts with traffic, not with a random wait.

    Without this every tenant sent a request at t = 0: noisy-neighbour's ten tenants put ten requests at
    once, so its first 20 requests came at 16.7 req/s instead of 4. A tenant with a later `start_s` than the
    others switches on at that moment on purpose (a prefill storm at 10 s) and keeps its first arrival there.
    One tenant's phase is 0, so single-tenant workloads are exactly as before.
    """
    first = min(t.start_s for t in tenants)
    raw = [
        float(t.arrival.gaps(np.random.default_rng([seed, TENANT_STREAM + i, PHASE_STREAM]), t.rate, 1)[0])
        if t.start_s == first
        else 0.0
        for i, t in enumerate(tenants)
    ]
    lead = min(p for p, t in zip(raw, tenants, strict=True) if t.start_s == first)
    return [p - lead if t.start_s == first else 0.0 for p, t in zip(raw, tenants, strict=True)]


def generate_open(
    tenants: Sequence[TenantSpec], seed: int, requests: int | None, duration_s: float | None
) -> pd.DataFrame:
    """Merge the tenants' arrival streams; stop at `duration_s`, or after `requests` arrivals, or both."""
    if requests is None and duration_s is None:
        raise WorkloadError("a synthetic workload needs requests or duration_s", field="requests")
    frames = []
    for i, (t, phase) in enumerate(zip(tenants, phases(tenants, seed), strict=True)):
        rng = np.random.default_rng([seed, TENANT_STREAM + i])
        start = t.start_s + phase
        horizon = None if duration_s is None else duration_s - start
        if horizon is not None and horizon <= 0:
            continue
        # Without a horizon, each tenant's first `requests` arrivals are enough to know the merged first N.
        caps = [c for c in (t.requests, requests) if c is not None]
        count = min(caps) if caps else None
        times = arrival_times(t.arrival, t.rate, rng, count=count, horizon_s=horizon, start_s=start)
        frames.append(_tenant_frame(t, times, rng))
    merged = sort_by_arrival(pd.concat(frames, ignore_index=True)) if frames else None
    if merged is None or merged.empty:
        raise WorkloadError("the tenants generate no requests in that duration", field="duration_s")
    if requests is None:
        return merged
    merged = merged.iloc[:requests].reset_index(drop=True)
    if duration_s is None and len(tenants) > 1 and all(t.start_s == 0 and t.requests is None for t in tenants):
        # Each tenant's stream has its exact rate, but the first N of the merged streams do not: stretch
        # them so the total is exactly the sum of the rates (each tenant keeps its share on average).
        total = sum(t.rate for t in tenants)
        merged = merged.assign(arrival_s=exact_rate(merged["arrival_s"].to_numpy(dtype=np.float64), total))
    return merged


def generate_closed(tenants: Sequence[TenantSpec], seed: int, requests: int | None) -> pd.DataFrame:
    """A request pool for a closed loop: tenants interleaved at random in proportion to their rates."""
    if requests is None:
        raise WorkloadError("a closed-loop synthetic workload needs a request count", field="requests")
    weights = np.array([t.rate for t in tenants], dtype=np.float64)
    rng = np.random.default_rng([seed, CLOSED_LOOP_STREAM])
    owner = rng.choice(len(tenants), requests, p=weights / weights.sum())
    parts = []
    for i, t in enumerate(tenants):
        positions = np.flatnonzero(owner == i)
        rng = np.random.default_rng([seed, TENANT_STREAM + i])
        parts.append(_tenant_frame(t, np.zeros(len(positions)), rng).assign(order=positions))
    merged = pd.concat(parts, ignore_index=True).sort_values("order", kind="stable")
    return merged.drop(columns="order").reset_index(drop=True)
