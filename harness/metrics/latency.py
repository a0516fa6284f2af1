"""Per-request latency columns and the pooled inter-token latencies.

Latency is measured from the *scheduled* arrival (`t_scheduled`) by default: a load generator that
falls behind sends late, and measuring from the late send would hide exactly the queueing the
engine caused (coordinated omission). The `_sent` variants measure from the actual send so the two
can be compared; their difference is the schedule lag.

Only successful requests (no `error_type`, finish_reason "length" or "stop") get latencies: a failed
request's timings describe the failure, not the service. Failures are counted separately and
count against SLO attainment.

A request the run *cut off* while it waited (aborted by a stop rule, or timed out) is not a failure of
the service but an observation that ended early: its TTFT, when it had no first token yet, and its E2E
are right-censored, known only to be at least its wait until then. Leaving such requests out is what
vLLM's and GuideLLM's percentiles do, and it makes an overloaded engine look better the more requests
it never served: a static-batching run stopped at its limit showed TTFT p99 13.5 s over the 14 requests
that got a first token, while 59 more had waited 20-38 s without one. `ttft_or_wait` / `e2e_or_wait`
hold the observed value or, for a censored request, that lower bound, with `ttft_censored` /
`e2e_censored` saying which; `harness.metrics.stats.describe` turns them into percentiles marked as
lower bounds where a censored value reaches them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.frame import flatten_token_times

SUCCESS_FINISH_REASONS = ("length", "stop")
CUT_OFF_ERRORS = ("stopped", "timeout", "cancelled")  # the run (or the client) gave up waiting
CENSORED_METRICS = ("ttft", "e2e")  # right-censored for requests cut off while they waited: `<m>_or_wait`

LATENCY_COLUMNS = (
    "ttft",
    "ttft_sent",
    "tpot",
    "e2e",
    "e2e_sent",
    "queue_delay",
    "queue_delay_sent",
    "normalized_latency",
    "slowdown",
)


# Figures that need the engine's admission time: n/a (null, with this reason) where the engine cannot see it
QUEUEING_METRICS = ("queue_delay", "queue_delay_sent", "slowdown")
ADMISSION_UNSEEN = (
    "the engine cannot see when the server admitted a request (an HTTP target: a client sees only the send and "
    "the tokens), so queueing delay, slowdown and the longest wait are unknown"
)


def admission_unseen(records: pd.DataFrame) -> str | None:
    """ADMISSION_UNSEEN when some request has a first token (so it was admitted) but no admission time: its
    engine reports none (an HTTP target, an imported result); None when every admission was seen. Queueing
    figures are then n/a with this reason, never the send time taken as admission (0 queueing)."""
    return ADMISSION_UNSEEN if (records["t_admitted"].isna() & records["t_first_token"].notna()).any() else None


def describe_unseen(summary: dict[str, Any]) -> str:
    """The line the console, summary.md and the report print for a run whose queueing was not measured; ""
    for one whose was."""
    block = (summary.get("latency") or {}).get("queue_delay") or {}
    if block.get("measured") is not False:
        return ""
    return f"queueing delay, slowdown and the longest wait n/a: {block.get('reason')}"


def succeeded(records: pd.DataFrame) -> pd.Series:
    """True for requests that finished normally (no error, finish_reason "length" or "stop")."""
    return records["error_type"].isna() & records["finish_reason"].isin(SUCCESS_FINISH_REASONS)


def cut_off(records: pd.DataFrame) -> pd.Series:
    """True for requests the run gave up on while they were still being served or waited for: aborted
    (a stop rule aborts through the engine, so its finish event says "abort" with no error), stopped,
    timed out or cancelled."""
    aborted = (records["finish_reason"] == "abort") & records["error_type"].isna()
    return aborted | records["error_type"].isin(CUT_OFF_ERRORS)


def last_token_time(records: pd.DataFrame) -> pd.Series:
    return pd.Series(
        [v[-1] if len(v) else np.nan for v in records["token_times"]], index=records.index, dtype="float64"
    )


def done_time(records: pd.DataFrame) -> pd.Series:
    """When the request stopped occupying the system: finish, else its last token, else its send.

    Failed requests often lack `t_finish`; the fallbacks give the latest time we know it was alive,
    which is what backlog intervals and run spans need.
    """
    finish = records["t_finish"]
    done = _done_time(records, finish.to_numpy(dtype=np.float64), records["t_sent"].to_numpy(dtype=np.float64))
    return pd.Series(done, index=records.index, name=finish.name)


def request_latencies(records: pd.DataFrame) -> pd.DataFrame:
    """One row per request: identifiers plus every per-request latency, in seconds (NaN = undefined).

    - ttft / ttft_sent: first token - scheduled arrival / - send
    - e2e / e2e_sent: finish - scheduled arrival / - send
    - tpot: (e2e - ttft) / (n - 1) = (finish - first token) / (n - 1), n = output tokens; NaN if n < 2
    - queue_delay / queue_delay_sent: admission - scheduled arrival / - send
    - normalized_latency: e2e / n
    - slowdown: e2e / (finish - admission), time in the system over time being served (>= 1)
    - schedule_lag: send - scheduled arrival (defined for every request, failed or not)
    - ttft_or_wait / e2e_or_wait: as ttft / e2e, and for a request cut off (`cut_off`) its observed TTFT
      or, censored (`ttft_censored` / `e2e_censored`), its wait until it was cut off: a lower bound
    """
    # numpy on the columns, one frame built at the end: pandas' per-column overhead was most of the cost on the
    # small runs a gate's calibration judges hundreds of (the values are the same, NaN where undefined)
    ok = succeeded(records).to_numpy(dtype=bool)
    cut = cut_off(records).to_numpy(dtype=bool) & ~ok

    def column(name: str) -> np.ndarray:
        return records[name].to_numpy(dtype=np.float64)

    n = column("output_tokens")
    sched, sent = column("t_scheduled"), column("t_sent")
    first, finish, admitted = column("t_first_token"), column("t_finish"), column("t_admitted")
    done = _done_time(records, finish, sent)
    with np.errstate(invalid="ignore", divide="ignore"):
        latencies = {
            "ttft": first - sched,
            "ttft_sent": first - sent,
            "tpot": (finish - first) / np.where(n >= 2, n - 1, np.nan),
            "e2e": finish - sched,
            "e2e_sent": finish - sent,
            "queue_delay": admitted - sched,
            "queue_delay_sent": admitted - sent,
            "normalized_latency": (finish - sched) / np.where(n >= 1, n, np.nan),
            "slowdown": (finish - sched) / np.where(finish > admitted, finish - admitted, np.nan),
        }
    latencies = {name: np.where(ok, values, np.nan) for name, values in latencies.items()}
    waited = done - sched
    no_first = np.isnan(first)
    ids = {name: records[name].array for name in ("request_id", "engine", "tenant", "trial")}
    return pd.DataFrame(
        {
            **ids,
            "succeeded": ok,
            "output_tokens": records["output_tokens"].array,
            "prompt_tokens": records["prompt_tokens"].array,
            "t_scheduled": sched,
            "t_done": done,
            **latencies,
            "schedule_lag": sent - sched,
            "ttft_censored": cut & no_first,
            "ttft_or_wait": np.where(cut, np.where(no_first, waited, first - sched), latencies["ttft"]),
            "e2e_censored": cut,
            "e2e_or_wait": np.where(cut, waited, latencies["e2e"]),
        },
        index=records.index,
    )


def _done_time(records: pd.DataFrame, finish: np.ndarray, sent: np.ndarray) -> np.ndarray:
    """`done_time` on the columns already read: finish, else the last token, else the send (the last tokens
    looked up only when a finish is missing: a run's summary asks for its done times a dozen times)."""
    missing = np.isnan(finish)
    if not missing.any():
        return finish.copy()
    last = last_token_time(records).to_numpy(dtype=np.float64)
    done = np.where(missing, last, finish)
    return np.where(np.isnan(done), sent, done)


def inter_token_latencies(records: pd.DataFrame, *, successful_only: bool = True) -> np.ndarray:
    """Every gap between consecutive output tokens of the same request, pooled over requests.

    This is vLLM/SGLang's ITL (and AIPerf's "ICL"); gaps never span two requests, and the time to
    the first token is not a gap.
    """
    rows = records[succeeded(records)] if successful_only else records
    flat, owner = flatten_token_times(rows["token_times"])
    if flat.size < 2:
        return np.empty(0, dtype=np.float64)
    gaps = np.diff(flat)
    same_request = owner[1:] == owner[:-1]
    return gaps[same_request]
