"""The job metric: how long a whole session (an agent's DAG of requests) took, and its SLO attainment.

    job_s = max(t_done over the session's requests) - min(t_scheduled over them)

from the session's first scheduled arrival to the last token of its last request, so think time, tool time
and waits at fan-out joins count, as they do for the person or program waiting on the agent. A job is
complete when every one of its requests succeeded; the percentiles (p50/p90/p99 with bootstrap intervals,
`harness.metrics.stats.describe`) are over complete jobs, since a failed job has no completion time. SLO
attainment is complete jobs with job_s <= the limit over all jobs, failed ones included (a failed job
misses it), with its Wilson interval. A job cut short by a stop rule counts with the requests it sent.
Records without sessions have no jobs: None.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pandas as pd

from harness.metrics.intervals import wilson
from harness.metrics.latency import request_latencies
from harness.metrics.stats import DEFAULT_CONFIDENCE, DEFAULT_N_BOOT, describe

JOB_PERCENTILES = (50.0, 90.0, 99.0)


def job_spans(records: pd.DataFrame) -> pd.DataFrame | None:
    """One row per session: `job_s`, `complete` (every request succeeded) and `requests`."""
    if "session" not in records or records["session"].isna().all():
        return None
    lat = request_latencies(records).assign(session=records["session"].to_numpy()).dropna(subset=["session"])
    grouped = lat.groupby("session")
    return pd.DataFrame(
        {
            "job_s": grouped["t_done"].max() - grouped["t_scheduled"].min(),
            "complete": grouped["succeeded"].all(),
            "requests": grouped.size(),
        }
    )


def job_completion(
    records: pd.DataFrame,
    slo_s: float | None = None,
    *,
    qs: Sequence[float] = JOB_PERCENTILES,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> dict[str, Any] | None:
    """Jobs, complete jobs, requests per job, completion-time percentiles with intervals, and the SLO's
    attainment when `slo_s` is given (else None: no limit, nothing to attain)."""
    spans = job_spans(records)
    if spans is None:
        return None
    done = spans.loc[spans["complete"], "job_s"]
    attainment = None
    if slo_s is not None:
        met = int((done <= slo_s).sum())
        share = wilson(met, len(spans), confidence)
        attainment = {"limit_s": slo_s, "met": met, "jobs": len(spans), **asdict(share)}
    return {
        "jobs": len(spans),
        "complete": len(done),
        "requests_mean": float(spans["requests"].mean()),
        "completion_s": describe(done, qs, n_boot=n_boot, confidence=confidence, seed=seed),
        "slo": attainment,
    }


def describe_jobs(jobs: dict[str, Any]) -> str:
    """One line for a summary's `jobs`, as the console, summary.md and the report print it."""

    from harness.judge.verdict import tail_is_resolved

    count = jobs["completion_s"]["count"]

    def at(label: str) -> str:
        p = jobs["completion_s"]["percentiles"].get(label) or {}
        if p.get("value") is None:
            return f"{label} n/a"
        if not tail_is_resolved(count, float(label[1:]) / 100):  # the judge's bound: about the extreme value
            return f"{label} {p['value']:.2f} s (≈ the extreme of {count}: unresolved)"
        ci = f" [{p['ci_low']:.2f}, {p['ci_high']:.2f}]" if p.get("ci_low") is not None and p.get("ci_high") else ""
        return f"{label} {p['value']:.2f} s{ci}"

    line = (
        f"jobs {jobs['jobs']} ({jobs['complete']} complete, {jobs['requests_mean']:.1f} requests each); completion "
        + ", ".join(at(label) for label in jobs["completion_s"]["percentiles"])
    )
    slo = jobs.get("slo")
    if slo is not None:
        share = "n/a" if slo["value"] is None else f"{slo['value']:.0%} [{slo['low']:.0%}, {slo['high']:.0%}]"
        line += f"; job SLO {slo['limit_s']:g} s met by {slo['met']} of {slo['jobs']} ({share})"
    return line
