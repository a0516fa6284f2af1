"""Early warnings: signals that precede SLO violations, each with a threshold, and how early each fired.

Every signal is evaluated on a time grid (every `interval_s`) from data up to that instant only, over a
sliding window of `window_s` (causal: what a monitor could have known then):

    queue_growth     growth of the waiting queue over the window as a share of the requests that arrived
                     in it (step trace: waiting count; records: admissions); > 0.2: a fifth pile up
    kv_utilisation   mean share of KV blocks in use over the window (step trace); > 0.90
    preemption_rate  preemptions per admission over the window (step trace); > 0.05
    ttft_p99         p99 TTFT of the requests whose first token came in the window, over the TTFT SLO; > 1.0
    vtc_gap          max - min service (VTC units) received in the window among tenants backlogged through
                     all of it, over the largest single request's service seen so far; > 2 (the scale of
                     the VTC paper's bound)
    longest_wait     longest wait of a queued, not yet admitted request, over the TTFT SLO; > 0.5 (half the
                     SLO spent queueing with no token yet)

SLO-violation onset: the first grid time at which more than `violation_share` (default 10%) of the
requests whose TTFT outcome became known in the window missed the TTFT SLO (a request is known to miss
once it has waited past the SLO without a token). Lead time = onset - first firing: positive means the
signal warned before harm. Records and step trace in, tables out (docs/metrics.md, docs/study.md).
`WarningMonitor` runs the step-trace signals on the trace as it streams, so a run can say a warning fired
while it goes.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.lib.stride_tricks import sliding_window_view

from harness.metrics.fairness import INPUT_WEIGHT, OUTPUT_WEIGHT, backlog_intervals, service_events
from harness.metrics.frame import list_lengths
from harness.metrics.latency import admission_unseen, done_time
from harness.metrics.slo import SLO

DEFAULT_THRESHOLDS: dict[str, float] = {
    "queue_growth": 0.2,
    "kv_utilisation": 0.90,
    "preemption_rate": 0.05,
    "ttft_p99": 1.0,
    "vtc_gap": 2.0,
    "longest_wait": 0.5,
}
SIGNALS = tuple(DEFAULT_THRESHOLDS)
STEP_SIGNALS = ("queue_growth", "kv_utilisation", "preemption_rate")  # from the step trace (and admissions)
MIN_EVENTS = 5  # a window with fewer arrivals, admissions or outcomes says nothing


@dataclass(frozen=True)
class WarningSettings:
    """The grid, the window and every threshold (defaults: `DEFAULT_THRESHOLDS`)."""

    window_s: float = 10.0
    interval_s: float = 1.0
    violation_share: float = 0.10
    thresholds: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))

    def with_thresholds(self, overrides: Mapping[str, float]) -> WarningSettings:
        unknown = sorted(set(overrides) - set(SIGNALS))
        if unknown:
            raise ValueError(f"unknown warning {unknown[0]!r} (known: {', '.join(SIGNALS)})")
        return WarningSettings(self.window_s, self.interval_s, self.violation_share, {**self.thresholds, **overrides})


# a run this many intervals long is evaluated only near its events (11.6 days at 1 s): a grid point per second of
# a trace whose arrivals lie years apart (bounded at ten) was 2.2 GiB per column
MAX_GRID_POINTS = 1_000_000


def grid(records: pd.DataFrame, steps: pd.DataFrame | None, interval_s: float, window_s: float = 0.0) -> np.ndarray:
    """Evaluation times from the first arrival to the last event; past MAX_GRID_POINTS, only the grid times
    within `window_s` after an arrival, a request's end or a step's (the others' windows hold no event)."""
    done = done_time(records).to_numpy(dtype=np.float64) if len(records) else np.zeros(0)
    end = float(np.nanmax(done)) if len(records) else 0.0
    step_ends = steps["t_end"].to_numpy(dtype=np.float64) if steps is not None and len(steps) else np.zeros(0)
    if len(step_ends):
        end = max(end, float(step_ends.max()))
    start = float(records["t_scheduled"].min()) if len(records) else 0.0
    if (end - start) / interval_s <= MAX_GRID_POINTS:
        return np.arange(start + interval_s, end + interval_s, interval_s)
    events = np.concatenate([records["t_scheduled"].to_numpy(dtype=np.float64), done, step_ends])
    first = np.ceil((events[np.isfinite(events)] - start) / interval_s)  # the grid index at or after each event
    offsets = np.arange(max(1, int(np.ceil(window_s / interval_s))) + 1)
    points = np.unique((first[:, None] + offsets[None, :]).ravel())
    return start + interval_s * points[(points >= 1) & (start + interval_s * points < end + interval_s)]


def _window_counts(times: np.ndarray, t: np.ndarray, window_s: float) -> np.ndarray:
    """How many of the sorted `times` fall in (t - window, t]."""
    return np.searchsorted(times, t, side="right") - np.searchsorted(times, t - window_s, side="right")


def _window_sums(times: np.ndarray, values: np.ndarray, t: np.ndarray, window_s: float) -> np.ndarray:
    cum = np.concatenate([[0.0], np.cumsum(values)])
    return cum[np.searchsorted(times, t, side="right")] - cum[np.searchsorted(times, t - window_s, side="right")]


# -- signals from the step trace --------------------------------------------------------------------
def step_signals(steps: pd.DataFrame, t: np.ndarray, window_s: float, admit_times: np.ndarray) -> dict[str, np.ndarray]:
    """queue_growth, kv_utilisation and preemption_rate at each time of `t` (NaN: no data in the window);
    `admit_times`: when requests were admitted, sorted (the records' `t_admitted`, or the streamed steps')."""
    steps = steps.sort_values("t_end")
    end = steps["t_end"].to_numpy(dtype=np.float64)
    nan = np.full(t.size, np.nan)
    if end.size == 0:
        return {name: nan.copy() for name in STEP_SIGNALS}
    waiting = steps["waiting"].to_numpy(dtype=np.float64)
    preempted = list_lengths(steps["preempted"]).astype(np.float64)
    total = steps["kv_blocks_total"].to_numpy(dtype=np.float64)
    kv = np.divide(steps["kv_blocks_used"].to_numpy(dtype=np.float64), total, out=np.zeros(end.size), where=total > 0)
    n = _window_counts(end, t, window_s)
    last = np.searchsorted(end, t, side="right") - 1
    first = np.searchsorted(end, t - window_s, side="right") - 1  # the last step before the window
    now_waiting = np.where(last >= 0, waiting[np.maximum(last, 0)], np.nan)
    then_waiting = np.where(first >= 0, waiting[np.maximum(first, 0)], 0.0)
    growth = now_waiting - then_waiting
    admits = _window_counts(admit_times, t, window_s).astype(np.float64)
    arrivals = admits + np.maximum(growth, 0.0)
    with np.errstate(invalid="ignore", divide="ignore"):
        queue_growth = np.where(arrivals >= MIN_EVENTS, growth / arrivals, np.nan)
        kv_mean = np.where(n > 0, _window_sums(end, kv, t, window_s) / n, np.nan)
        preemption = np.where(admits >= MIN_EVENTS, _window_sums(end, preempted, t, window_s) / admits, np.nan)
    return {"queue_growth": queue_growth, "kv_utilisation": kv_mean, "preemption_rate": preemption}


# -- signals from the records -----------------------------------------------------------------------
def ttft_p99_signal(records: pd.DataFrame, t: np.ndarray, window_s: float, slo_s: float) -> np.ndarray:
    """p99 TTFT of the requests whose first token came in the window, over the SLO."""
    first = records["t_first_token"].to_numpy(dtype=np.float64)
    ttft = first - records["t_scheduled"].to_numpy(dtype=np.float64)
    keep = np.isfinite(first)
    order = np.argsort(first[keep], kind="stable")
    when, values = first[keep][order], ttft[keep][order]
    hi = np.searchsorted(when, t, side="right")
    lo = np.searchsorted(when, t - window_s, side="right")
    return window_p99(values, lo, hi) / slo_s


def window_p99(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """`np.percentile(values[a:b], 99)` of each window [a, b) of `lo` and `hi`, NaN where it holds fewer than
    `MIN_EVENTS`: bit for bit the same, the windows of one length in one call (a row's percentile along an axis
    is the one its slice alone gives) instead of a call a window (thousands of them)."""
    out = np.full(lo.size, np.nan)
    size = hi - lo
    for m in np.unique(size[size >= MIN_EVENTS]).tolist():
        rows = np.flatnonzero(size == m)
        out[rows] = np.percentile(sliding_window_view(values, m)[lo[rows]], 99, axis=1)
    return out


def _leave_times(records: pd.DataFrame) -> np.ndarray:
    """When each request left the queue: its admission, else when it was done (never admitted)."""
    return records["t_admitted"].fillna(done_time(records)).to_numpy(dtype=np.float64)


def longest_wait(records: pd.DataFrame, t: np.ndarray) -> np.ndarray:
    """The longest wait, at each time of `t`, of a request that had arrived and was not yet admitted; NaN where
    the engine cannot see admission (`admission_unseen`: the wait would end at the send)."""
    if admission_unseen(records):
        return np.full(t.size, np.nan)
    sched = records["t_scheduled"].to_numpy(dtype=np.float64)
    leave = _leave_times(records)
    order = np.argsort(leave, kind="stable")
    leave, sched = leave[order], sched[order]
    suffix_min = np.minimum.accumulate(sched[::-1])[::-1] if sched.size else sched  # min arrival among leave > t
    idx = np.searchsorted(leave, t, side="right")
    oldest = np.where(idx < sched.size, suffix_min[np.minimum(idx, max(sched.size - 1, 0))], np.inf)
    return np.where(oldest <= t, t - oldest, 0.0)


def longest_wait_by_tenant(records: pd.DataFrame, t: np.ndarray) -> pd.DataFrame:
    """`longest_wait` per tenant: one column per tenant, one row per time of `t`."""
    return pd.DataFrame({str(k): longest_wait(g, t) for k, g in records.groupby("tenant", sort=True)}, index=t)


def vtc_gap_signal(records: pd.DataFrame, t: np.ndarray, window_s: float) -> tuple[np.ndarray, list[str | None]]:
    """Window service gap among tenants backlogged through the window, over the largest request's service
    seen so far; and the tenant served least at each time (None when fewer than two tenants qualify)."""
    out = np.full(t.size, np.nan)
    least: list[str | None] = [None] * t.size
    tenants = sorted(records["tenant"].astype(str).unique())
    if len(tenants) < 2:
        return out, least
    events = service_events(records)
    backlog = backlog_intervals(records)
    size = INPUT_WEIGHT * records["prompt_tokens"].to_numpy(dtype=np.float64) + OUTPUT_WEIGHT * records[
        "max_tokens"
    ].to_numpy(dtype=np.float64)
    arrival = records["t_scheduled"].to_numpy(dtype=np.float64)
    order = np.argsort(arrival, kind="stable")
    biggest = np.maximum.accumulate(size[order])
    seen = np.searchsorted(arrival[order], t, side="right") - 1
    scale = np.where(seen >= 0, biggest[np.maximum(seen, 0)], np.nan)
    service = np.full((len(tenants), t.size), np.nan)
    for k, name in enumerate(tenants):
        ev = events[events["tenant"] == name]
        got = _window_sums(ev["t"].to_numpy(), ev["service"].to_numpy(), t, window_s)
        spans = backlog[backlog["tenant"] == name]
        starts, ends = spans["start"].to_numpy(), spans["end"].to_numpy()
        j = np.searchsorted(starts, t - window_s, side="right") - 1  # the last interval starting by t - window
        through = (j >= 0) & (ends[np.maximum(j, 0)] >= t) if starts.size else np.zeros(t.size, bool)
        service[k] = np.where(through, got, np.nan)
    qualified = np.isfinite(service).sum(axis=0) >= 2
    if qualified.any():
        hi, lo = np.nanmax(service[:, qualified], axis=0), np.nanmin(service[:, qualified], axis=0)
        out[qualified] = (hi - lo) / scale[qualified]
        low_idx = np.nanargmin(service[:, qualified], axis=0)
        for i, k in zip(np.flatnonzero(qualified), low_idx, strict=True):
            least[i] = tenants[k]
    return out, least


def violation_onset(records: pd.DataFrame, t: np.ndarray, window_s: float, slo_s: float, share: float) -> float | None:
    """The first time of `t` when more than `share` of the TTFT outcomes known in the window were misses."""
    sched = records["t_scheduled"].to_numpy(dtype=np.float64)
    first = records["t_first_token"].to_numpy(dtype=np.float64)
    deadline = sched + slo_s
    missed = ~(first <= deadline)  # NaN first token (never came) is a miss
    known = np.where(missed, deadline, first)
    order = np.argsort(known, kind="stable")
    known, missed = known[order], missed[order].astype(np.float64)
    n = _window_counts(known, t, window_s)
    bad = _window_sums(known, missed, t, window_s)
    hit = np.flatnonzero((n >= MIN_EVENTS) & (bad > share * n))
    return float(t[hit[0]]) if hit.size else None


# -- the table and its summary ----------------------------------------------------------------------
def warning_timeline(
    records: pd.DataFrame, steps: pd.DataFrame | None, slo: SLO, settings: WarningSettings = WarningSettings()
) -> pd.DataFrame:
    """One row per grid time: every signal's value (NaN: no data), and the tenant served least."""
    t = grid(records, steps, settings.interval_s, settings.window_s)
    slo_s = slo.ttft_s if slo.ttft_s else np.inf
    table = pd.DataFrame({"t": t})
    if steps is not None and len(steps):
        admitted = np.sort(records["t_admitted"].dropna().to_numpy(dtype=np.float64))
        for name, values in step_signals(steps, t, settings.window_s, admitted).items():
            table[name] = values
    else:
        for name in STEP_SIGNALS:
            table[name] = np.nan
    table["ttft_p99"] = ttft_p99_signal(records, t, settings.window_s, slo_s)
    table["vtc_gap"], table["least_served_tenant"] = vtc_gap_signal(records, t, settings.window_s)
    table["longest_wait"] = longest_wait(records, t) / slo_s
    return table


def first_firing(timeline: pd.DataFrame, thresholds: Mapping[str, float]) -> dict[str, float | None]:
    """Per signal, the first time its value exceeded its threshold (None: never)."""
    out: dict[str, float | None] = {}
    for name in SIGNALS:
        fired = timeline["t"][timeline[name] > thresholds[name]]
        out[name] = float(fired.iloc[0]) if len(fired) else None
    return out


def early_warnings(
    records: pd.DataFrame, steps: pd.DataFrame | None, slo: SLO, settings: WarningSettings = WarningSettings()
) -> dict[str, Any]:
    """metrics.json's `warnings`: onset, and per signal its threshold, first firing, lead time and peak."""
    if records.empty:
        return {"slo_violation_onset_s": None, "signals": {}, "earliest": None, "parameters": _params(settings)}
    timeline = warning_timeline(records, steps, slo, settings)
    slo_s = slo.ttft_s if slo.ttft_s else np.inf
    onset = violation_onset(records, timeline["t"].to_numpy(), settings.window_s, slo_s, settings.violation_share)
    fired = first_firing(timeline, settings.thresholds)
    signals: dict[str, Any] = {}
    for name in SIGNALS:
        values = timeline[name].to_numpy(dtype=np.float64)
        when = fired[name]
        entry: dict[str, Any] = {
            "threshold": settings.thresholds[name],
            "first_fire_s": when,
            "lead_s": None if when is None or onset is None else onset - when,
            "peak": float(np.nanmax(values)) if np.isfinite(values).any() else None,
            "measured": bool(np.isfinite(values).any()),
        }
        if name == "longest_wait" and (unseen := admission_unseen(records)):
            entry["reason"] = unseen
        if name == "vtc_gap" and when is not None:
            entry["least_served_tenant"] = timeline.loc[timeline["t"] == when, "least_served_tenant"].iloc[0]
        if name == "longest_wait" and when is not None:
            waits = longest_wait_by_tenant(records, np.array([when]))
            entry["tenant"] = str(waits.iloc[0].idxmax())
        signals[name] = entry
    candidates = [(v["first_fire_s"], k) for k, v in signals.items() if v["first_fire_s"] is not None]
    return {
        "slo_violation_onset_s": onset,
        "signals": signals,
        "earliest": min(candidates)[1] if candidates else None,
        "timeline": {c: timeline[c].tolist() for c in ("t", *SIGNALS)},
        "parameters": _params(settings),
    }


def _params(settings: WarningSettings) -> dict[str, Any]:
    return {
        "window_s": settings.window_s,
        "interval_s": settings.interval_s,
        "violation_share": settings.violation_share,
        "thresholds": dict(settings.thresholds),
    }


_MONITORED = ("t_start", "t_end", "waiting", "preempted", "kv_blocks_used", "kv_blocks_total")


class WarningMonitor:
    """The step-trace signals on a trace as it streams: `observe` each step record; `on_fire(name, t, value)`
    is called once per signal, the first time it exceeds its threshold at a grid time."""

    def __init__(
        self,
        settings: WarningSettings = WarningSettings(),
        on_fire: Callable[[str, float, float], None] = lambda name, t, value: None,
    ) -> None:
        self.settings = settings
        self.on_fire = on_fire
        self.fired: dict[str, float] = {}
        self._rows: deque[dict[str, Any]] = deque()
        self._admits: deque[float] = deque()  # admission times (a step's start), as the records have them
        self._next = settings.interval_s

    def observe(self, step: Any) -> None:
        get = step.get if isinstance(step, Mapping) else lambda key: getattr(step, key)
        row = {k: get(k) for k in _MONITORED}
        self._rows.append(row)
        self._admits.extend([row["t_start"]] * len(get("admitted")))
        if row["t_end"] < self._next:
            return
        now = np.array([self._next])
        while self._next <= row["t_end"]:
            self._next += self.settings.interval_s
        keep = row["t_end"] - 2 * self.settings.window_s  # older steps can no longer fall in a window
        while self._rows and self._rows[0]["t_end"] < keep:
            self._rows.popleft()
        while self._admits and self._admits[0] < keep:
            self._admits.popleft()
        values = step_signals(pd.DataFrame(self._rows), now, self.settings.window_s, np.sort(np.array(self._admits)))
        for name, value in values.items():
            if name not in self.fired and value[0] > self.settings.thresholds[name]:
                self.fired[name] = float(now[0])
                self.on_fire(name, float(now[0]), float(value[0]))
