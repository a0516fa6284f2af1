"""The sweep's decisions, as pure functions over a `measure(rate, engines, phase)` callback.

Climb: run the rates in ascending order; an engine leaves the climb at its first rate that breaks the
SLO or a stop rule (higher rates would only break harder and cost more time). Capacity: the highest
rate that met the SLO below the first that did not. Binary search then narrows that bracket (stepping
down first when even the lowest rate broke).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from harness.sweep.point import Point

Measure = Callable[[float, Sequence[str], str], dict[str, Point]]
# several rates at once (an executor with free slots runs them side by side): one dict per rate, in order
MeasureMany = Callable[[Sequence[float], Sequence[str], str], list[dict[str, Point]]]


@dataclass(frozen=True)
class Capacity:
    """The highest offered rate that met the SLO, and the bracket around it."""

    rate: float | None  # highest offered rate meeting the SLO; None when even the lowest failed
    bound: str  # "bracketed": the next rate up failed; "at_least": nothing failed; "below": nothing met
    low: float | None  # the bracket: highest meeting rate ...
    high: float | None  # ... and lowest failing rate above it


def spread(saturation: float, points: int, low_fraction: float, spacing: str = "geometric") -> list[float]:
    """`points` offered rates from `low_fraction` x saturation up to saturation. Geometric spacing gives an
    engine far weaker than the best one (whose saturation sets the range) several rates to land on."""
    if points < 2:
        return [_round(saturation)]
    lo = saturation * low_fraction
    if spacing == "linear":
        raw = [lo + (saturation - lo) * i / (points - 1) for i in range(points)]
    else:
        raw = [lo * (saturation / lo) ** (i / (points - 1)) for i in range(points)]
    return sorted({_round(r) for r in raw})


def _round(rate: float) -> float:
    """Three significant digits: rates become readable directory names and table rows."""
    if rate <= 0:
        return rate
    digits = 2 - math.floor(math.log10(rate))
    return round(rate, max(digits, 0))


def climb(
    rates: Sequence[float],
    engines: Sequence[str],
    measure: Measure,
    *,
    extend: int = 0,
    measure_many: MeasureMany | None = None,
    batch: int = 1,
) -> list[Point]:
    """Ascend through `rates`; with `extend`, keep climbing past the last rate by the same step (at most
    `extend` more rates) while an engine still meets the SLO, so its capacity gets an upper bracket.
    `batch` > 1 (with `measure_many`): that many rates are measured at once; a point above an engine's
    first broken rate is then dropped, so the points are those a one-at-a-time climb would keep."""
    ladder = sorted(rates)
    factor = ladder[-1] / ladder[-2] if len(ladder) > 1 and ladder[-2] > 0 else 2.0
    for _ in range(extend):
        ladder.append(_round(ladder[-1] * factor))
    active = list(engines)
    points: list[Point] = []
    step = max(1, batch) if measure_many is not None else 1
    for i in range(0, len(ladder), step):
        if not active:
            break
        chunk = ladder[i : i + step]
        measured = measure_many(chunk, active, "climb") if step > 1 else [measure(chunk[0], active, "climb")]
        for got in measured:
            points += [got[e] for e in active]
            active = [e for e in active if got[e].meets]
    return points


def capacity(points: Sequence[Point], engine: str, meets: Callable[[Point], bool] | None = None) -> Capacity:
    """`meets`: whether a point counts as meeting (default: the sweep's own SLO criterion, `Point.meets`)."""
    ok = meets or (lambda p: p.meets)
    mine = sorted((p for p in points if p.engine == engine and p.phase != "probe"), key=lambda p: p.rate)
    failing = [p.rate for p in mine if not ok(p)]
    first_fail = min(failing) if failing else None
    meeting = [p.rate for p in mine if ok(p) and (first_fail is None or p.rate < first_fail)]
    if not meeting:
        return Capacity(None, "below", None, first_fail)
    best = max(meeting)
    return Capacity(best, "at_least" if first_fail is None else "bracketed", best, first_fail)


def class_capacity(points: Sequence[Point], engine: str, name: str, min_attainment: float) -> Capacity:
    """Capacity for one SLO class: a rate meets when no stop rule fired and at least `min_attainment` of the
    class's requests met its own targets. The climb stops at the engine's first rate that breaks the run's
    SLO, so a class that still meets there has capacity "at_least" that rate."""

    def meets(p: Point) -> bool:
        share = (p.classes or {}).get(name)
        return p.stopped is None and share is not None and share >= min_attainment

    return capacity(points, engine, meets)


def bisect(engine: str, points: Sequence[Point], measure: Measure, steps: int, tolerance: float) -> list[Point]:
    """Halve the engine's bracket up to `steps` times, or until high / low - 1 <= tolerance. When even the
    lowest rate broke the SLO, step down by halves first to find a rate that meets it."""
    found: list[Point] = []
    for _ in range(steps):
        cap = capacity([*points, *found], engine)
        if cap.high is None or (cap.low is not None and cap.high / cap.low - 1 <= tolerance):
            break
        mid = _round(cap.high / 2 if cap.low is None else (cap.low + cap.high) / 2)
        if mid in (cap.low, cap.high) or mid <= 0:
            break  # the bracket is narrower than the rounding
        found.append(measure(mid, [engine], "search")[engine])
    return found
