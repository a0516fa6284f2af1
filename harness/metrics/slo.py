"""SLO attainment and goodput: how many requests were served well enough to be worth serving.

A request meets the SLO when it succeeded and each configured limit holds: TTFT and E2E measured
from the scheduled arrival, TPOT as in `latency`. TPOT is undefined for outputs of fewer than two
tokens; such a request has nothing to violate, so only its other limits apply. A limit of None
is not checked. Failed requests never meet the SLO.

Defaults follow MLPerf Inference's llama2-70b server scenario (TTFT 2 s, TPOT 200 ms). They are
GPU-sized; runs of the tiny CPU model should pass limits scaled to it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import pandas as pd

from harness.metrics.latency import request_latencies
from harness.metrics.throughput import (
    DEFAULT_WARMUP_FRACTION,
    Window,
    rate_problem,
    run_window,
    steady_window,
)


@dataclass(frozen=True)
class SLO:
    """Latency limits a request must meet to count as good (None: no limit on that metric)."""

    ttft_s: float | None = 2.0
    tpot_s: float | None = 0.2
    e2e_s: float | None = None
    job_s: float | None = None  # a whole session's completion time (harness.metrics.jobs), not a request's

    def to_json(self) -> dict[str, float | None]:
        out = asdict(self)
        if out["job_s"] is None:  # absent unless set: settings written before it read the same
            del out["job_s"]
        return out


DEFAULT_SLO = SLO()


def describe_limits(limits: dict[str, float | None]) -> str:
    """`SLO.to_json()`'s limits as a reader reads them: a request's in ms, a whole job's (`job_s`) in s (a job
    takes seconds to minutes: 5 s, not "5000 ms"); a limit that is None is left out."""
    return ", ".join(
        f"job {v:g} s" if k == "job_s" else f"{k.removesuffix('_s')} {v * 1e3:g} ms"
        for k, v in limits.items()
        if v is not None
    )


def slo_table(latencies: pd.DataFrame, slo: SLO = DEFAULT_SLO) -> pd.DataFrame:
    """Per request (rows of `request_latencies`): meets_ttft, meets_tpot, meets_e2e, meets_slo."""
    ok = latencies["succeeded"]
    # NaN compares False, so undefined values fail a limit unless explicitly excused below.
    ttft = ok if slo.ttft_s is None else ok & (latencies["ttft"] <= slo.ttft_s)
    tpot = ok if slo.tpot_s is None else ok & ((latencies["tpot"] <= slo.tpot_s) | latencies["tpot"].isna())
    e2e = ok if slo.e2e_s is None else ok & (latencies["e2e"] <= slo.e2e_s)
    return pd.DataFrame(
        {
            "request_id": latencies["request_id"],
            "meets_ttft": ttft,
            "meets_tpot": tpot,
            "meets_e2e": e2e,
            "meets_slo": ttft & tpot & e2e,
        },
        index=latencies.index,
    )


def _rate(records: pd.DataFrame, good: pd.Series, window: Window | None, kind: str) -> tuple[float | None, str | None]:
    """SLO-meeting finishes per second in `window`, or None and why (the window is the throughput's, and is
    judged by the same rule: a window too short to see requests through says nothing about goodput either)."""
    problem = rate_problem(records, window, kind, "finish")
    if problem is not None or window is None:
        return None, problem
    return int((good & records["t_finish"].between(window.start, window.end)).sum()) / window.duration_s, None


def goodput(
    records: pd.DataFrame,
    slo: SLO = DEFAULT_SLO,
    *,
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
) -> dict[str, Any]:
    """SLO attainment share (over all requests, failures included) and goodput in requests/s.

    Goodput counts SLO-meeting requests by finish time in the same windows as `throughput`; where that
    window is degenerate it is None and `goodput_rps_<window>_reason` says why (never a 0.0 beside a
    100% attainment).
    """
    lat = request_latencies(records)
    met = slo_table(lat, slo)
    total = len(lat)
    n_met = int(met["meets_slo"].sum())
    ok = lat["succeeded"]
    steady, steady_reason = _rate(
        records, met["meets_slo"], steady_window(records, warmup_fraction=warmup_fraction), "steady"
    )
    whole, whole_reason = _rate(records, met["meets_slo"], run_window(records), "whole_run")
    return {
        "slo": {k: v for k, v in slo.to_json().items() if k != "job_s"},  # a request's limits: a job's is in `jobs`
        "requests": total,
        "met": n_met,
        "attainment": n_met / total if total else None,
        "violations": {
            "failed": int((~ok).sum()),
            "ttft": int((ok & ~met["meets_ttft"]).sum()),
            "tpot": int((ok & ~met["meets_tpot"]).sum()),
            "e2e": int((ok & ~met["meets_e2e"]).sum()),
        },
        "goodput_rps_steady": steady,
        "goodput_rps_steady_reason": steady_reason,
        "goodput_rps_whole_run": whole,
        "goodput_rps_whole_run_reason": whole_reason,
    }
