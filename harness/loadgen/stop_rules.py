"""Stop rules: limits that end an engine's run early, so a sweep does not grind through a hopeless load.

Each rule looks at a sliding window of the most recent finished requests (or at the queue of requests
in flight). The first rule to fire is recorded with the time and the value that broke it.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from engines.errors import ENGINE_FAILURE
from harness.loadgen.saturation import OverSaturation, SaturationDetector
from harness.records import RequestRecord


@dataclass(frozen=True)
class StopRules:
    """Limits that end an engine's run early (None: off)."""

    max_error_rate: float | None = None  # share of failed requests in the window
    max_in_flight: int | None = None  # requests sent but not finished (the engine's queue, seen from outside)
    max_ttft_p99_s: float | None = None  # p99 TTFT (from the scheduled arrival) over the window
    max_run_s: float | None = None  # the run ends this long after t0, whatever is left (a bounded demo or CI job)
    over_saturated: OverSaturation | None = None  # the slope test of harness/loadgen/saturation.py
    window: int = 50
    min_samples: int = 20  # never judge on fewer finished requests than this

    def active(self) -> bool:
        limits = (self.max_error_rate, self.max_in_flight, self.max_ttft_p99_s, self.max_run_s, self.over_saturated)
        return any(v is not None for v in limits)

    def notes(self, scenario: str) -> list[str]:
        """What the run must be told before it starts: a rule the scenario makes unable to fire (not an error: a
        sweep may pass the flag to every point, and the rule is right not to fire there)."""
        if self.over_saturated is None or scenario not in ("closed", "offline"):
            return []
        why = {
            "closed": "a closed loop holds requests in flight at its users",
            "offline": "everything is sent at once, so requests in flight only fall",
        }[scenario]
        return [
            f"--stop-over-saturated cannot fire with --scenario {scenario}: {why} (docs/metrics.md#over-saturation)"
        ]


@dataclass
class StopState:
    """The stop rules' sliding windows during one run, and the first rule that fired."""

    rules: StopRules
    reason: dict[str, Any] | None = None
    _errors: deque[bool] = field(default_factory=deque)
    _ttft: deque[float] = field(default_factory=deque)
    _started: float = field(default_factory=time.perf_counter)
    _saturation: SaturationDetector | None = None

    def __post_init__(self) -> None:
        if self.rules.over_saturated is not None:
            self._saturation = SaturationDetector(self.rules.over_saturated)

    def _fire(self, rule: str, value: float, limit: float) -> None:
        if self.reason is None:
            self.reason = {"rule": rule, "value": value, "limit": limit, "at_s": time.perf_counter() - self._started}

    def observe(self, record: RequestRecord) -> None:
        rules = self.rules
        if record.error_type == ENGINE_FAILURE and self.reason is None:
            # always on: a dead engine answers every later request with the same error at once, so
            # sending the rest of the schedule would only turn it into failed records
            self._fire("engine_failure", 1.0, 0.0)
            self.reason["message"] = record.error_message  # type: ignore[index]
            return
        if not rules.active() or self.reason is not None:
            return
        if self._saturation is not None:
            self._saturation.observe(record.t_scheduled, record.t_first_token, record.t_finish)
        self._errors.append(record.error_type is not None)
        if record.t_first_token is not None:
            self._ttft.append(record.t_first_token - record.t_scheduled)
        while len(self._errors) > rules.window:
            self._errors.popleft()
        while len(self._ttft) > rules.window:
            self._ttft.popleft()
        if rules.max_error_rate is not None and len(self._errors) >= rules.min_samples:
            rate = sum(self._errors) / len(self._errors)
            if rate > rules.max_error_rate:
                self._fire("max_error_rate", rate, rules.max_error_rate)
        if rules.max_ttft_p99_s is not None and len(self._ttft) >= rules.min_samples:
            p99 = float(np.percentile(np.fromiter(self._ttft, float), 99))
            if p99 > rules.max_ttft_p99_s:
                self._fire("max_ttft_p99_s", p99, rules.max_ttft_p99_s)

    def triggered(self, in_flight: int, now: float | None = None) -> bool:
        """Whether a rule has fired; `now` is the run's clock (records' time base; default: the wall clock
        since `start`), given by virtual-time runs, whose clock is the engine's."""
        limit = self.rules.max_in_flight
        if limit is not None and self.reason is None and in_flight > limit:
            self._fire("max_in_flight", in_flight, limit)
        if self._saturation is not None and self.reason is None:
            t = time.perf_counter() - self._started if now is None else now
            self._saturation.sample_in_flight(t, in_flight)
            evidence = self._saturation.check(t)
            if evidence is not None:
                # value: the in-flight growth's lower bound; limit 0: the bound is a test, not a threshold
                self._fire("over_saturated", evidence["in_flight"]["lower_bound_per_s"], 0.0)
                self.reason = {**self.reason, "at_s": t, "evidence": evidence}  # type: ignore[dict-item]
        if self.rules.max_run_s is not None and self.reason is None:
            elapsed = time.perf_counter() - self._started
            if elapsed >= self.rules.max_run_s:
                self._fire("max_run_s", elapsed, self.rules.max_run_s)
        return self.reason is not None

    def unjudged(self) -> str | None:
        """Why `--stop-over-saturated` never judged this run (None: it judged, fired, or was not asked for)."""
        if self._saturation is None or self.reason is not None:
            return None
        return self._saturation.unjudged()

    def start(self, t0: float) -> None:
        """The run's clock starts at t0 (perf_counter): `max_run_s` and `at_s` count from it."""
        self._started = t0

    def remaining(self) -> float | None:
        """Seconds until `max_run_s` runs out (None without that rule)."""
        if self.rules.max_run_s is None:
            return None
        return max(0.0, self._started + self.rules.max_run_s - time.perf_counter())
