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


def throughput(records: pd.DataFrame, window: Window | None) -> dict[str, float | int | str | None]:
    """Requests/s, output tokens/s and total (prompt + output) tokens/s inside `window`."""
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
        }
    ok = records[succeeded(records)]
    s, e = window.start, window.end
    finished = ok["t_finish"].between(s, e)
    flat, _ = flatten_token_times(ok["token_times"])
    out_tokens = int(((flat >= s) & (flat <= e)).sum())
    prompt_tokens = int(ok.loc[ok["t_first_token"].between(s, e), "prompt_tokens"].sum())
    n_req = int(finished.sum())
    d = window.duration_s
    return {
        **window.to_json(),
        "requests": n_req,
        "output_tokens": out_tokens,
        "prompt_tokens": prompt_tokens,
        "request_rate": n_req / d,
        "output_token_rate": out_tokens / d,
        "total_token_rate": (out_tokens + prompt_tokens) / d,
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
    rows = {name: throughput(records, window) for name, window in windows.items()}
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
    return {"requests": len(records), "offered_rate_rps": offered, "send_rate_rps": sent, "send_over_offered": ratio}
