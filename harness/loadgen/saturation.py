"""Over-saturation detection: is the target falling behind the offered load, beyond reasonable doubt?

An engine below capacity holds a steady number of requests in flight and a steady TTFT; above capacity its
queue grows without bound, so both grow roughly linearly in time. The detector fits a line to each signal
over a sliding window and fires when, for *both*, the one-sided lower confidence bound of the slope is
above zero: growth that noise would not explain, with no fixed limit on how many requests or seconds is
"too many".

Why spans, not raw samples: in-flight counts seen at successive arrivals (and TTFTs of neighbouring
requests) are strongly autocorrelated, so a regression on raw samples would claim far more certainty than
the data hold and fire on a stable queue's wanderings. The window is cut into spans and the regression runs
on the span means (spans - 2 degrees of freedom), its standard error widened by the residuals' lag-1
autocorrelation. A span lasts `block_e2e` times the median E2E of the run's first `calibrate` finished
requests (the run's own time scale, taken before any queue could build). The first span is the warm-up (the
ramp from an empty engine to its steady queue is not growth); the window then holds every span since, from
`min_blocks` (the first judgement) up to `max_blocks`, after which it slides, so a long stable run is judged
on its whole history and a late onset is still seen.

The in-flight count is sampled at every arrival; the test runs at most twice per span, i.e. still many times
a run, and the high default confidence (99.9%, one-sided) keeps the chance of a false alarm over a whole run
small. Measured on the simulator: docs/measurements/2026-12-04-over-saturation.md.
"""

from __future__ import annotations

import functools
import statistics
from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from harness.metrics.stats import t_quantile


@dataclass(frozen=True)
class OverSaturation:
    """The detector's settings (docs/metrics.md, "Over-saturation")."""

    confidence: float = 0.999  # one-sided, per check, on each slope
    min_blocks: int = 6  # spans in the first window judged: the regression's points
    max_blocks: int = 64  # the window grows with the run up to this many spans, then slides
    block_e2e: float = 8.0  # a span lasts this many early median E2Es: longer than a stable queue's excursions
    calibrate: int = 20  # finished requests whose median E2E sets the time scale


@dataclass(frozen=True)
class Slope:
    """A line fitted to one signal's span means: the slope, its one-sided lower bound, and the points."""

    slope: float
    lower: float
    points: int

    def to_json(self) -> dict[str, float | int]:
        return {"slope_per_s": self.slope, "lower_bound_per_s": self.lower, "blocks": self.points}


def block_slope(
    xs: np.ndarray, ys: np.ndarray, start: float, end: float, blocks: int, confidence: float
) -> Slope | None:
    """OLS slope of the per-span means of (xs, ys) over [start, end) cut into `blocks` spans, and its one-sided
    lower bound at `confidence`; None when fewer than three spans hold data (no residual to judge by)."""
    keep = (xs >= start) & (xs < end)
    which = np.minimum(((xs[keep] - start) / (end - start) * blocks).astype(np.int64), blocks - 1)
    counts = np.bincount(which, minlength=blocks)
    sums = np.bincount(which, weights=ys[keep], minlength=blocks)
    filled = counts > 0
    n = int(filled.sum())
    if n < 3:
        return None
    x = (start + (np.arange(blocks) + 0.5) * (end - start) / blocks)[filled]
    y = sums[filled] / counts[filled]
    dx = x - x.mean()
    sxx = float((dx**2).sum())
    slope = float((dx * (y - y.mean())).sum() / sxx)
    residual = y - y.mean() - slope * dx
    se = (float((residual**2).sum()) / (n - 2) / sxx) ** 0.5
    # neighbouring spans of a stable queue still share excursions: widen the bound by the residuals' lag-1
    # autocorrelation (the AR(1) variance inflation), never narrow it
    ss = float((residual**2).sum())
    r = float((residual[1:] * residual[:-1]).sum() / ss) if ss > 0 else 0.0
    r = min(max(r, 0.0), 0.9)
    se *= ((1 + r) / (1 - r)) ** 0.5
    return Slope(slope, slope - _t_quantile(confidence, n - 2) * se, n)


@functools.lru_cache(maxsize=64)
def _t_quantile(confidence: float, dof: int) -> float:
    return t_quantile(confidence, dof)


@dataclass
class SaturationDetector:
    """Feed it in-flight counts (at arrivals) and finished requests; `check(now)` says whether it fired."""

    settings: OverSaturation = field(default_factory=OverSaturation)
    _in_flight: deque[tuple[float, float]] = field(default_factory=deque)  # (run time, requests in flight)
    _ttft: deque[tuple[float, float]] = field(default_factory=deque)  # (first token's run time, TTFT)
    _early_e2e: list[float] = field(default_factory=list)
    _span_s: float | None = None
    _next_check: float = 0.0
    _judged: int = 0  # tests run: a run that ends before the first is not judged, which must be said

    def sample_in_flight(self, now: float, in_flight: int) -> None:
        self._in_flight.append((now, float(in_flight)))

    def observe(self, t_scheduled: float, t_first_token: float | None, t_finish: float | None) -> None:
        if t_first_token is not None:
            self._ttft.append((t_first_token, t_first_token - t_scheduled))
        if self._span_s is None and t_finish is not None:
            self._early_e2e.append(t_finish - t_scheduled)
            if len(self._early_e2e) >= self.settings.calibrate:
                median = statistics.median(self._early_e2e)
                self._span_s = self.settings.block_e2e * median if median > 0 else None

    def check(self, now: float) -> dict[str, Any] | None:
        """The evidence when both slopes are positive beyond doubt at `now`, else None."""
        s = self.settings
        if self._span_s is None:
            return None
        span = self._span_s
        # the first span is the warm-up (an empty engine filling to its steady queue); then one judgement per
        # half span, not per arrival
        blocks = min(int(now / span) - 1, s.max_blocks)
        if blocks < s.min_blocks or now < self._next_check:
            return None
        self._next_check = now + span / 2
        self._judged += 1
        start = now - blocks * span
        for series in (self._in_flight, self._ttft):
            while series and series[0][0] < start:
                series.popleft()
        slopes = [self._fit(series, start, now, blocks) for series in (self._in_flight, self._ttft)]
        if any(fit is None or fit.lower <= 0 for fit in slopes):
            return None
        in_flight, ttft = slopes
        assert in_flight is not None and ttft is not None
        return {
            "at_s": now,
            "window_s": [start, now],
            "span_s": span,
            "confidence": s.confidence,
            "in_flight": in_flight.to_json(),
            "ttft": ttft.to_json(),
            "in_flight_now": int(self._in_flight[-1][1]) if self._in_flight else None,
        }

    def unjudged(self) -> str | None:
        """Why the detector never judged the run (None when it did): silence is then no verdict of stability."""
        if self._judged:
            return None
        s = self.settings
        if self._span_s is None:
            return f"fewer than {s.calibrate} requests finished, so no time scale was set"
        spans, span = s.min_blocks + 1, self._span_s
        return f"the run ended before its first judgement at about {spans * span:.3g} s ({spans} spans of {span:.3g} s)"

    def _fit(self, series: deque[tuple[float, float]], start: float, end: float, blocks: int) -> Slope | None:
        if not series:
            return None
        data = np.asarray(series, dtype=np.float64)
        return block_slope(data[:, 0], data[:, 1], start, end, blocks, self.settings.confidence)
