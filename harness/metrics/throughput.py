"""Throughput over the steady-state window and over the whole run.

Steady-state window: from the scheduled arrival of the first request after the first 10% of
arrivals (warm-up) to the last scheduled arrival (after it the system only drains). Both ends come
from the *schedule*, not from the engine's behaviour, so two engines run on the same schedule are
measured over exactly the same interval, which a rule such as "until in-flight reaches its median"
would not guarantee (a slower engine would reach its level at a different time).

Counting inside a window [start, end] (both ends inclusive), successful requests only:
requests at their finish time, output tokens at their own arrival times (so a long request
straddling a window edge contributes only the tokens produced inside it), prompt tokens at the
request's first token (when prefill is known to be done).

A rate is only reported when its window can carry one. A window that does not exist (a burst, every
request scheduled at one instant), or one that none of the run's events of the rate's kind fell in
(`rate_problem`), measures a transient: such a rate is None with a `reason`, never 0.0. On a burst of
64 requests at "1000 req/s" the steady window is 60 ms long and closes before the first token, and a
0 tok/s there compared with another 0 tok/s once let a gate pass a candidate 3.6x slower. A window in
which an engine finished little is a real, low rate (a static batch engine in overload).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd

from harness.metrics.frame import flatten_token_times
from harness.metrics.latency import done_time, succeeded

DEFAULT_WARMUP_FRACTION = 0.1


@dataclass(frozen=True)
class Window:
    """A span of the run's time, e.g. the steady window between ramp-up and drain."""

    kind: str  # "steady" or "whole_run"
    start: float
    end: float

    @property
    def duration_s(self) -> float:
        return self.end - self.start

    def to_json(self) -> dict[str, float | str]:
        return {**asdict(self), "duration_s": self.duration_s}


def steady_window(records: pd.DataFrame, *, warmup_fraction: float = DEFAULT_WARMUP_FRACTION) -> Window | None:
    """[arrival after the first `warmup_fraction` of arrivals, last scheduled arrival]; None if empty.

    A burst workload (every request scheduled at once) has no steady state, hence None.
    """
    arrivals = np.sort(records["t_scheduled"].to_numpy(dtype=np.float64))
    if arrivals.size == 0:
        return None
    start = float(arrivals[int(np.floor(warmup_fraction * arrivals.size))])
    end = float(arrivals[-1])
    return Window("steady", start, end) if end > start else None


def run_window(records: pd.DataFrame) -> Window | None:
    """[first scheduled arrival, last moment any request was alive]."""
    if records.empty:
        return None
    start = float(records["t_scheduled"].min())
    end = float(done_time(records).max())
    return Window("whole_run", start, end) if end > start else None


def missing_window_reason(records: pd.DataFrame, kind: str) -> str:
    """Why the run has no window of this kind (steady_window / run_window returned None)."""
    if records.empty:
        return "no requests"
    if kind != "steady":
        return f"no {kind.replace('_', ' ')} window: the run has no extent in time"
    if records["t_scheduled"].nunique() <= 1:
        return "no steady window: every request was scheduled at the same instant (a burst); see the whole-run rate"
    return "no steady window: the arrivals after warm-up all share one instant"


def finished_in(records: pd.DataFrame, window: Window) -> int:
    """Successful requests that finished inside `window` (both ends inclusive)."""
    return int((succeeded(records) & records["t_finish"].between(window.start, window.end)).sum())


RATES = ("request_rate", "output_token_rate", "total_token_rate")
# What each rate counts, and so the latency after an arrival at which its events start to flow.
EVENTS = {"request_rate": "finish", "goodput": "finish", "output_token_rate": "token", "total_token_rate": "token"}


def rate_problem(
    records: pd.DataFrame,
    window: Window | None,
    kind: str = "steady",
    event: str = "finish",
    *,
    token_times: np.ndarray | None = None,
) -> str | None:
    """Why a rate of `event`s ("finish": requests, goodput; "token": tokens) over `window` would say 0.0 for
    "no data" (None: the rate measures something).

    The window is degenerate for that rate when none of the run's events of that kind fell inside it
    while the run had some: they all came before or after it, as in a burst whose steady window closes
    before its first token, or a short run whose window closes before its first finish. A window with
    events is a rate, however low (an overloaded engine's); a run with no such event at all (nothing
    succeeded) is a true zero. Shared by throughput, goodput and the CI gate, so all three call the same
    window degenerate. `token_times`: the successful requests' token times, flat, when the caller has them.
    """
    if window is None:
        return missing_window_reason(records, kind)
    ok = records[succeeded(records)]
    if event == "finish":
        return events_problem(ok["t_finish"].to_numpy(dtype=np.float64), window, kind, "finish")
    if token_times is None:
        token_times, _ = flatten_token_times(ok["token_times"])
    return events_problem(token_times, window, kind, "token")


def events_problem(times: np.ndarray, window: Window, kind: str, event: str) -> str | None:
    """`rate_problem` for event times already at hand (successful requests' finishes, or their tokens)."""
    noun = "request finished" if event == "finish" else "token was produced"
    times = times[np.isfinite(times)]
    inside = int(((times >= window.start) & (times <= window.end)).sum())
    if inside or times.size == 0:
        return None
    first = float(times.min())
    return (
        f"no {noun} inside the {window.duration_s:.3g} s {kind.replace('_', ' ')} window (the run's first came "
        f"at {first:.3g} s, the window closed at {window.end:.3g} s): a rate over it would measure a transient"
    )


def throughput(
    records: pd.DataFrame, window: Window | None, *, kind: str | None = None, token_times: np.ndarray | None = None
) -> dict[str, float | int | str | None]:
    """Requests/s, output tokens/s and total (prompt + output) tokens/s inside `window`.

    Counts are always given; the rates are None, with `reason` saying why, when `rate_problem` finds the
    window degenerate. `token_times`: the successful requests' token times, flat, when the caller has them
    (a summary's four windows flatten a trace's millions of tokens once).
    """
    kind = kind or (window.kind if window is not None else "steady")
    ok = records[succeeded(records)]
    flat = flatten_token_times(ok["token_times"])[0] if token_times is None else token_times  # once, not per rate
    reasons = {rate: rate_problem(records, window, kind, EVENTS[rate], token_times=flat) for rate in RATES}
    reason = next((r for r in reasons.values() if r is not None), None)
    if window is None:
        return {
            "kind": None,
            "start": None,
            "end": None,
            "duration_s": None,
            "requests": 0,
            "output_tokens": 0,
            "prompt_tokens": 0,
            "request_rate": None,
            "output_token_rate": None,
            "total_token_rate": None,
            "reason": reason,
            "reasons": reasons,
        }
    s, e = window.start, window.end
    finished = ok["t_finish"].between(s, e)
    out_tokens = int(((flat >= s) & (flat <= e)).sum())
    prompt_tokens = int(ok.loc[ok["t_first_token"].between(s, e), "prompt_tokens"].sum())
    n_req = int(finished.sum())
    d = window.duration_s
    counts = {"request_rate": n_req, "output_token_rate": out_tokens, "total_token_rate": out_tokens + prompt_tokens}
    return {
        **window.to_json(),
        "requests": n_req,
        "output_tokens": out_tokens,
        "prompt_tokens": prompt_tokens,
        **{rate: counts[rate] / d if reasons[rate] is None else None for rate in RATES},
        "reason": reason,  # the first undefined rate's reason (None: every rate is defined)
        "reasons": reasons,
    }


def run_windows(records: pd.DataFrame, *, warmup_fraction: float = DEFAULT_WARMUP_FRACTION) -> dict[str, Window | None]:
    """The run cut into "warmup", "steady" and "drain", plus "whole_run"; None where empty.

    Without a steady window (e.g. a burst) the run is not cut, so warm-up and drain are None too.
    """
    whole = run_window(records)
    steady = steady_window(records, warmup_fraction=warmup_fraction)
    warmup = drain = None
    if whole is not None and steady is not None:
        if steady.start > whole.start:
            warmup = Window("warmup", whole.start, steady.start)
        if whole.end > steady.end:
            drain = Window("drain", steady.end, whole.end)
    return {"warmup": warmup, "steady": steady, "drain": drain, "whole_run": whole}


def throughput_table(records: pd.DataFrame, *, warmup_fraction: float = DEFAULT_WARMUP_FRACTION) -> pd.DataFrame:
    """Rows "warmup", "steady", "drain" and "whole_run", with the columns of `throughput`."""
    windows = run_windows(records, warmup_fraction=warmup_fraction)
    flat, _ = flatten_token_times(records.loc[succeeded(records), "token_times"])
    rows = {name: throughput(records, window, kind=name, token_times=flat) for name, window in windows.items()}
    table = pd.DataFrame.from_dict(rows, orient="index").drop(columns="kind")
    table.index.name = "window"
    return table


def _rate(times: np.ndarray) -> float | None:
    """1 / mean gap = (n - 1) / span: the convention of workload describe and of synthetic arrivals."""
    times = times[np.isfinite(times)]
    if times.size < 2:
        return None
    span = float(times.max() - times.min())
    return (times.size - 1) / span if span > 0 else None


def send_rates(records: pd.DataFrame) -> dict[str, float | int | None]:
    """The load offered (from the requests' scheduled times) beside the load actually sent.

    Both as 1 / mean gap, the convention the workloads use, so a schedule offered at exactly R reads R.
    A dispatcher that falls behind, or a closed loop whose users wait on their answers, sends below it;
    burst schedules (every request at once) have no rate: None.
    """
    offered = _rate(records["t_scheduled"].to_numpy(dtype=np.float64))
    sent = _rate(records["t_sent"].to_numpy(dtype=np.float64))
    ratio = sent / offered if sent is not None and offered else None
    return {
        "requests": len(records),
        "offered_rate_rps": offered,
        "send_rate_rps": sent,
        "send_over_offered": ratio,
        "mean_in_flight": mean_in_flight(records),
    }


def mean_in_flight(records: pd.DataFrame) -> float | None:
    """The concurrency a run actually held, by Little's law: sum over requests of (t_finish - t_sent) divided by
    the span from the first send to the last finish. A closed loop of U users that sends the moment an answer ends
    reads just under U (its ramp up and down); a client that waits between a user's requests reads less (AIPerf
    0.13's loop of 16 read 15.2 here: docs/measurements/2026-12-07-peer-agreement-v2-aiperf.md). Requests that
    never finished are left out; None when no request finished or the span is 0."""
    sent = records["t_sent"].to_numpy(dtype=np.float64)
    finish = records["t_finish"].to_numpy(dtype=np.float64)
    done = np.isfinite(sent) & np.isfinite(finish)
    if not done.any():
        return None
    span = float(finish[done].max() - sent[done].min())
    return float((finish[done] - sent[done]).sum()) / span if span > 0 else None
