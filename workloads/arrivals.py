"""Synthetic arrival processes: renewal processes given by a rate and a coefficient of variation.

Poisson is the CV = 1 case (exponential gaps); gamma gaps give any CV (shape = 1 / CV^2, so CV > 1 means
bursts of near-simultaneous arrivals separated by long silences); constant rate is CV = 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from workloads.errors import WorkloadError

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
    """Arrival times from `start_s`: `count` of them, or all before `start_s + horizon_s`, whichever is fewer.

    The first request arrives at `start_s` itself, so a workload starts with traffic instead of a random wait.
    """
    if count is None and horizon_s is None:
        raise ValueError("need a count or a horizon")
    if not rate > 0:
        raise WorkloadError(f"must be > 0, found {rate!r}", field="rate")
    if count is not None:
        times = start_s + np.concatenate(([0.0], np.cumsum(process.gaps(rng, rate, max(count - 1, 0)))))
        times = times[:count]
    else:
        times = np.array([start_s])
    if horizon_s is None:
        return times
    # Draw in chunks until the horizon is passed: burstier processes overshoot or undershoot a fixed guess.
    end = start_s + horizon_s
    while times[-1] < end and (count is None or len(times) < count):
        chunk = int(rate * (end - times[-1]) * 1.2) + 16
        times = np.concatenate((times, times[-1] + np.cumsum(process.gaps(rng, rate, chunk))))
    times = times[times < end]
    return times if count is None else times[:count]
