"""One engine run's steady-window rates with their batch-means intervals, read from its records: the output
throughput (successful requests' tokens per second) and the goodput (SLO-meeting finishes per second), or
why each is undefined (the rule of `harness.metrics.throughput.rate_problem`, applied to the records, so
runs recorded before the rule existed are judged by it too)."""

from __future__ import annotations

from typing import Any, Protocol

import numpy as np
import pandas as pd

from harness.metrics.intervals import Estimate, batch_means
from harness.metrics.slo import SLO, slo_table
from harness.metrics.throughput import events_problem, rate_problem, steady_window


class TokenTimes(Protocol):
    flat: np.ndarray  # every token time, request after request
    owner: np.ndarray  # the row of `records` each token belongs to


class EngineRunView(Protocol):
    """What the rates read of one engine run (reports.load.EngineRun has it)."""

    records: pd.DataFrame
    tokens: TokenTimes
    summary: dict[str, Any]

    @property
    def latencies(self) -> pd.DataFrame: ...


def steady_rate_problem(er: EngineRunView, event: str = "finish") -> str | None:
    """Why the run's steady-window rates of `event` ("finish" or "token") are undefined (None: defined)."""
    if er.records.empty:  # another tool's aggregates: the summary says why it has no steady window
        return ((er.summary.get("throughput") or {}).get("steady") or {}).get("reason") or "no records"
    window = steady_window(er.records)
    if window is None or event == "finish":
        return rate_problem(er.records, window, "steady", event)
    return events_problem(_ok_tokens(er), window, "steady", "token")  # token times are flat here, not per row


def _ok_tokens(er: EngineRunView) -> np.ndarray:
    ok = er.latencies["succeeded"].to_numpy()
    return er.tokens.flat[ok[er.tokens.owner]] if er.tokens.flat.size else er.tokens.flat


def _steady(er: EngineRunView, event: str) -> tuple[float, float] | None:
    window = steady_window(er.records)
    return (window.start, window.end) if window is not None and steady_rate_problem(er, event) is None else None


def throughput_estimate(er: EngineRunView) -> Estimate:
    window = _steady(er, "token")
    if window is None:
        return Estimate(None, reason=steady_rate_problem(er, "token"))
    return batch_means(_ok_tokens(er), *window)


def goodput_estimate(er: EngineRunView) -> Estimate:
    window = _steady(er, "finish")
    if window is None:
        return Estimate(None, reason=steady_rate_problem(er, "finish"))
    limits = ((er.summary.get("slo") or {}).get("slo")) or {}
    slo = SLO(**{k: limits.get(k) for k in ("ttft_s", "tpot_s", "e2e_s")})
    met = slo_table(er.latencies, slo)["meets_slo"].to_numpy()
    finish = er.records["t_finish"].to_numpy(dtype=np.float64)[met]
    return batch_means(finish, *window)
