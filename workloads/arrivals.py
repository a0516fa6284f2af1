"""Synthetic arrival processes: renewal processes given by a rate and a coefficient of variation.

Poisson is the CV = 1 case (exponential gaps); gamma gaps give any CV (shape = 1 / CV^2, so CV > 1 means
bursts of near-simultaneous arrivals separated by long silences); constant rate is CV = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from workloads.errors import WorkloadError
from workloads.options import MAX_REQUESTS

PROCESSES = ("poisson", "gamma", "constant")


@dataclass(frozen=True)
class ArrivalProcess:
    """How a tenant's requests arrive: Poisson, gamma (any inter-arrival CV: bursty above 1) or constant."""

    process: str = "poisson"
    cv: float = 1.0  # only free for "gamma"

    def gaps(self, rng: np.random.Generator, rate: float, n: int) -> np.ndarray:
        mean = 1.0 / rate
        if self.process == "constant" or self.cv == 0:
            return np.full(n, mean)
        if self.process == "poisson":
            return rng.exponential(mean, n)
        shape = 1.0 / self.cv**2
        return rng.gamma(shape, mean / shape, n)

    def to_spec(self) -> dict[str, Any]:
        return {"process": self.process, "cv": self.cv}


def parse_arrival(value: Any, field: str = "arrival") -> ArrivalProcess:
    """From a spec value: "poisson", or a table such as {process = "gamma", cv = 4}."""
    table = {"process": value} if isinstance(value, str) else value
    if not isinstance(table, dict):
        raise WorkloadError(f"expected a process name or a table, found {value!r}", field=field)
    unknown = sorted(set(table) - {"process", "cv"})
    if unknown:
        raise WorkloadError(f"unknown key {unknown[0]!r}; expected process, cv", field=field)
    process = table.get("process", "poisson")
    if process not in PROCESSES:
        raise WorkloadError(
            f"unknown process {process!r}; expected one of {', '.join(PROCESSES)}", field=f"{field}.process"
        )
    default_cv = {"poisson": 1.0, "constant": 0.0, "gamma": None}[process]
    cv = table.get("cv", default_cv)
    if process != "gamma":
        if "cv" in table and cv != default_cv:
            raise WorkloadError(
                f'a {process} process has CV {default_cv:g}; use process = "gamma" for another CV', field=f"{field}.cv"
            )
        return ArrivalProcess(process, float(default_cv))
    if isinstance(cv, bool) or not isinstance(cv, int | float) or not cv > 0 or cv == float("inf"):
        raise WorkloadError(f"a gamma process needs a finite cv > 0, found {cv!r}", field=f"{field}.cv")
    return ArrivalProcess(process, float(cv))


def arrival_times(
    process: ArrivalProcess,
    rate: float,
    rng: np.random.Generator,
    *,
    count: int | None = None,
    horizon_s: float | None = None,
    start_s: float = 0.0,
) -> np.ndarray:
    """Arrival times from `start_s`: `count` of them, or as many as fit before `start_s + horizon_s`.

    The offered rate is exactly `rate`, not a random draw around it (240 Poisson arrivals "at 8 req/s"
    span anything from 7.1 to 10.2 req/s before rescaling, so two tools "at the same rate" would offer
    different loads). The rate of N arrivals is 1 / their mean gap, (N - 1) / (last - first), and the
    N - 1 drawn gaps are rescaled so their mean is exactly 1 / rate: the shape of the process (its CV,
    its bursts) is kept, its scale is fixed. With a horizon, N is the count whose last arrival at that
    mean gap still lies before the horizon: ceil(rate x horizon). The first request arrives at `start_s`
    itself, so a workload starts with traffic instead of a random wait.
    """
    if count is None and horizon_s is None:
        raise ValueError("need a count or a horizon")
    if not rate > 0 or rate == float("inf"):
        raise WorkloadError(f"must be a finite number > 0, found {rate!r}", field="rate")
    n = count
    if horizon_s is not None:
        expected = rate * horizon_s
        if n is None and not expected <= MAX_REQUESTS:
            what = f"{rate:g} req/s for {horizon_s:g} s is more requests than a workload may hold ({MAX_REQUESTS:,})"
            raise WorkloadError(what, field="duration_s")
        fits = max(1, math.ceil(min(expected, MAX_REQUESTS + 1) - 1e-9))
        n = fits if n is None else min(n, fits)
    assert n is not None
    if n > MAX_REQUESTS:
        raise WorkloadError(f"{n:,} arrivals: more than a workload may hold ({MAX_REQUESTS:,})", field="requests")
    gaps = process.gaps(rng, rate, max(n - 1, 0))
    total = float(gaps.sum())
    if n > 1 and total > 0 and math.isfinite(total):
        gaps = gaps * ((n - 1) / rate / total)
    return start_s + np.concatenate(([0.0], np.cumsum(gaps)))


def exact_rate(times: np.ndarray, rate: float) -> np.ndarray:
    """`times` stretched about their first value so that (N - 1) / span is exactly `rate`."""
    if len(times) < 2 or not times[-1] > times[0]:
        return times
    return times[0] + (times - times[0]) * ((len(times) - 1) / rate / (times[-1] - times[0]))
