"""`describe`: the numbers that say what a workload will do to an engine.

Conventions (the same as the bundled traces' SOURCE.md, so the numbers can be checked against it):
span = last minus first arrival; mean rate = 1 / mean inter-arrival gap = (requests - 1) / span (the rate
synthetic arrivals are rescaled to, and run metrics use for offered and sent load); inter-arrival CV =
population standard deviation over mean of the gaps; peak 1-second rate = most arrivals in one of the 1 s
bins counted from the first arrival; percentiles use numpy's default linear interpolation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # `Workload` calls these functions: at run time the import goes one way only
    from workloads.model import Workload

PREFIX_BLOCK_TOKENS = 512


def length_summary(values: np.ndarray) -> dict[str, float | int | None]:
    if len(values) == 0:
        return dict.fromkeys(("min", "mean", "p50", "p90", "p99", "max"))
    p50, p90, p99 = np.percentile(values, [50, 90, 99])
    return {
        "min": int(values.min()),
        "mean": round(float(values.mean()), 3),
        "p50": round(float(p50), 6),
        "p90": round(float(p90), 6),
        "p99": round(float(p99), 6),
        "max": int(values.max()),
    }


def arrival_summary(arrivals: np.ndarray) -> dict[str, float | int | None]:
    span = float(arrivals[-1] - arrivals[0]) if len(arrivals) else 0.0
    gaps = np.diff(arrivals)
    gap_mean = float(gaps.mean()) if len(gaps) else 0.0
    if span <= 0:  # a closed loop or a single request: no rate to speak of
        return {
            "span_s": span,
            "mean_rate_rps": None,
            "interarrival_mean_s": None,
            "interarrival_cv": None,
            "peak_1s_requests": None,
        }
    bins = np.floor(arrivals - arrivals[0]).astype(np.int64)
    return {
        "span_s": round(span, 6),
        "mean_rate_rps": round((len(arrivals) - 1) / span, 6),
        "interarrival_mean_s": round(gap_mean, 6),
        "interarrival_cv": round(float(gaps.std() / gap_mean), 6),
        # counted per occupied second, not by bincount: a bin per second of span was 2.2 GiB for arrivals 9 years apart
        "peak_1s_requests": int(np.unique(bins, return_counts=True)[1].max()),
    }


def prefix_summary(workload: Workload) -> dict[str, Any] | None:
    blocks = [h for r in workload.requests for h in r.prefix_hash_ids]
    if not blocks:
        return None
    unique = len(set(blocks))
    # Share of blocks an infinite prefix cache could reuse: every repeat of an earlier block.
    return {
        "block_tokens": PREFIX_BLOCK_TOKENS,
        "total": len(blocks),
        "unique": unique,
        "reuse_fraction": round(1 - unique / len(blocks), 6),
    }


def tenant_summary(workload: Workload) -> dict[str, dict[str, int]]:
    tenants: dict[str, dict[str, int]] = {}
    for r in workload.requests:
        entry = tenants.setdefault(r.tenant, {"requests": 0, "priority": r.priority})
        entry["requests"] += 1
    return dict(sorted(tenants.items()))


def reasoning_summary(workload: Workload) -> dict[str, Any]:
    """`reasoning_tokens` (their lengths) and `reasoning_exhausts` (requests whose output is all reasoning), for a
    workload with reasoning tokens; nothing for one without, so its description is as it was."""
    r = np.fromiter((q.reasoning_tokens for q in workload.requests), dtype=np.int64, count=len(workload.requests))
    if not r.any():
        return {}
    out = np.fromiter((q.output_tokens for q in workload.requests), dtype=np.int64, count=len(workload.requests))
    return {"reasoning_tokens": length_summary(r), "reasoning_exhausts": int((r >= out).sum())}


def agentic_summary(workload: Workload) -> dict[str, Any]:
    """`agentic`: jobs (sessions), later turns, those that fan out, branches per turn, tool time in seconds
    (every later turn's, 0 included), turns per job, think time (the turns that have one) and the turns whose
    context starts over, for a workload with tool time or fan-out; nothing for one without."""
    if not any(r.branch or r.tool_s for r in workload.requests):
        return {}
    branches: dict[tuple[str | None, int], int] = {}
    tools, thinks = [], []
    for r in workload.requests:
        branches[(r.session, r.turn)] = branches.get((r.session, r.turn), 0) + 1
        if r.turn and not r.branch:
            tools.append(r.tool_s)
            thinks += [r.think_s] if r.think_s else []
    later = [n for (_, turn), n in branches.items() if turn]
    per_job: dict[str | None, int] = {}
    for session, _ in branches:
        per_job[session] = per_job.get(session, 0) + 1

    def quantiles(values: list[float] | list[int]) -> dict[str, float] | None:
        qs = (round(float(v), 6) for v in np.percentile(values, (50, 90, 100))) if values else ()
        return dict(zip(("p50", "p90", "max"), qs, strict=True)) if values else None

    return {
        "agentic": {
            "jobs": len({r.session for r in workload.requests}),
            "later_turns": len(later),
            "fanned_out_turns": sum(1 for n in later if n > 1),
            "branches_max": max(branches.values()),
            "tool_s": quantiles(tools),
            "turns_per_job": quantiles(list(per_job.values())),
            "think_s": quantiles(thinks),
            "fresh_turns": sum(1 for r in workload.requests if r.fresh),
        }
    }


def describe(workload: Workload) -> dict[str, Any]:
    requests = workload.requests
    arrivals = np.fromiter((r.arrival_s for r in requests), dtype=np.float64, count=len(requests))
    inputs = np.fromiter((r.input_tokens for r in requests), dtype=np.int64, count=len(requests))
    outputs = np.fromiter((r.output_tokens for r in requests), dtype=np.int64, count=len(requests))
    closed = workload.closed_loop_users is not None
    return {
        "name": workload.name,
        "requests": len(requests),
        **arrival_summary(np.array([]) if closed else arrivals),
        "input_tokens": length_summary(inputs),
        "output_tokens": length_summary(outputs),
        **reasoning_summary(workload),
        **agentic_summary(workload),
        "tenants": tenant_summary(workload),
        "closed_loop_users": workload.closed_loop_users,
        "think_time_s": workload.think_time_s if closed else None,
        "prefix_blocks": prefix_summary(workload),
        "seed": workload.spec.get("seed"),
        "fingerprint": workload.fingerprint(),
        "notes": list(workload.notes),
    }
