"""Transforms on `Workload` objects: each returns a new workload and records its step in the spec.

A step applied here leaves the same record as the same option given to `load_workload`, so
`time_scale(load_workload("azure-conv"), 2)` and `load_workload("azure-conv", time_scale=2)` have one
fingerprint.
"""

from __future__ import annotations

from workloads.errors import WorkloadError
from workloads.frame import from_requests, to_requests
from workloads.model import Workload
from workloads.options import check_option
from workloads.transforms import TIMED_STEPS, Step, apply_step


def _apply(workload: Workload, step: Step) -> Workload:
    if workload.closed_loop_users is not None and step["op"] in TIMED_STEPS:
        raise WorkloadError("a closed-loop workload has no arrival times to transform", field=step["op"])
    frame, notes = apply_step(from_requests(workload.requests), step)
    spec = {**workload.spec, "transforms": [*workload.spec.get("transforms", []), step]}
    return Workload(
        workload.name,
        to_requests(frame),
        spec,
        [*workload.notes, *notes],
        workload.closed_loop_users,
        workload.think_time_s,
        workload.class_sources,
        workload.slo_classes,
    )


def closed_loop_note(users: int, think_time_s: float) -> str:
    return (
        f"closed loop: {users} users send requests in list order, thinking {think_time_s:g} s between a "
        "response and their next request"
    )


def _seed(workload: Workload, seed: int | None) -> int:
    return check_option("seed", seed if seed is not None else workload.spec.get("seed", 0))


def spread_ties(workload: Workload, seed: int | None = None, width_s: float | None = None) -> Workload:
    """Spread requests sharing a timestamp over the gap to the next one (seeded uniform jitter)."""
    width = check_option("jitter_width_s", width_s) if width_s is not None else None
    return _apply(workload, {"op": "spread_ties", "seed": _seed(workload, seed), "width_s": width})


def time_window(workload: Workload, start_s: float = 0.0, duration_s: float | None = None) -> Workload:
    """Requests arriving in [start_s, start_s + duration_s), re-timed to start at 0."""
    duration = check_option("duration_s", duration_s) if duration_s is not None else None
    return _apply(workload, {"op": "window", "start_s": check_option("start_s", start_s), "duration_s": duration})


def time_scale(workload: Workload, factor: float) -> Workload:
    """Replay `factor` times as fast: arrival times divided by `factor`, requests unchanged."""
    return _apply(workload, {"op": "time_scale", "factor": check_option("time_scale", factor)})


def override_rate(workload: Workload, rate: float, cv: float | None = None, seed: int | None = None) -> Workload:
    """Same span at a new mean rate, requests resampled so the length distribution is kept."""
    step = {
        "op": "override_rate",
        "rate": check_option("rate", rate),
        "cv": check_option("rate_cv", cv) if cv is not None else None,
        "seed": _seed(workload, seed),
    }
    return _apply(workload, step)


def first_requests(workload: Workload, n: int) -> Workload:
    return _apply(workload, {"op": "first", "requests": check_option("first", n)})


def sample_requests(workload: Workload, n: int, seed: int | None = None) -> Workload:
    """N requests drawn without replacement, in arrival order (the mean rate falls with the count)."""
    return _apply(workload, {"op": "sample", "requests": check_option("requests", n), "seed": _seed(workload, seed)})


def clip_to_context(workload: Workload, max_context: int, block_tokens: int = 512) -> Workload:
    """Fit every request's input + output into `max_context` tokens; the note says how many were clipped."""
    return _apply(
        workload, {"op": "clip", "max_context": check_option("max_context", max_context), "block_tokens": block_tokens}
    )


def to_closed_loop(workload: Workload, users: int, think_time_s: float = 0.0) -> Workload:
    """The same requests, in the same order, issued by `users` users with `think_time_s` between turns."""
    users = check_option("closed_loop_users", users)
    think = check_option("think_time_s", think_time_s)
    requests = to_requests(from_requests(workload.requests).assign(arrival_s=0.0))
    spec = {**workload.spec, "closed_loop": {"users": users, "think_time_s": think}}
    notes = [*workload.notes, closed_loop_note(users, think)]
    return Workload(workload.name, requests, spec, notes, users, think, workload.class_sources, workload.slo_classes)
