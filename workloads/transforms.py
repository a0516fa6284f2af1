"""Transforms: pure functions from a workload table to a new one, plus a note when something was lost.

Each transform is a step, a small json-serialisable dict such as {"op": "time_scale", "factor": 2.0}, so the
spec that records the steps, in order, is enough to redo them. `apply_step` runs one step on a table;
`workloads.ops` wraps the steps for `Workload` objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from workloads.arrivals import ArrivalProcess, arrival_times
from workloads.errors import WorkloadError
from workloads.frame import sort_by_arrival
from workloads.options import MAX_REQUESTS

Step = dict[str, Any]
Result = tuple[pd.DataFrame, list[str]]
# Random steps draw from their own stream of the workload seed: a different step never reuses numbers.
STREAMS = {"spread_ties": 1, "override_rate": 2, "sample": 3}


def _rng(step: Step) -> np.random.Generator:
    return np.random.default_rng([int(step["seed"]), STREAMS[step["op"]]])


def _span(frame: pd.DataFrame) -> float:
    return float(frame["arrival_s"].max() - frame["arrival_s"].min())


def _interarrival_cv(frame: pd.DataFrame) -> float:
    gaps = np.diff(frame["arrival_s"].to_numpy())
    return float(gaps.std() / gaps.mean()) if len(gaps) > 1 and gaps.mean() > 0 else 1.0


def spread_ties(frame: pd.DataFrame, step: Step) -> Result:
    """Spread requests that share a timestamp uniformly over the gap to the next distinct timestamp.

    Mooncake's conversation trace is quantised to ~3 s steps; replayed exactly it fires bursts of up to 28
    requests at once. Offsets are sorted, so requests keep their source order within a step.
    """
    t = frame["arrival_s"].to_numpy()
    distinct, first, counts = np.unique(t, return_index=True, return_counts=True)
    if len(distinct) == len(t):
        return frame, []
    gaps = np.diff(distinct)
    last_gap = float(np.median(gaps)) if len(gaps) else 1.0
    width = np.append(gaps, last_gap)
    if step.get("width_s") is not None:
        width = np.minimum(width, float(step["width_s"]))
    rng = _rng(step)
    new_t = t.copy()
    tied = np.flatnonzero(counts > 1)
    for g in tied:
        offsets = np.sort(rng.uniform(0.0, width[g], counts[g]))
        offsets[0] = 0.0  # the step's first request stays put, so spans and windows do not move
        new_t[first[g] : first[g] + counts[g]] = distinct[g] + offsets
    spread = int(counts[tied].sum())
    note = f"spread {spread} requests sharing {len(tied)} timestamps over the gap to the next timestamp"
    return sort_by_arrival(frame.assign(arrival_s=new_t)), [note]


def window(frame: pd.DataFrame, step: Step) -> Result:
    start, duration = float(step["start_s"]), step.get("duration_s")
    end = math.inf if duration is None else start + float(duration)
    t = frame["arrival_s"]
    kept = frame[(t >= start) & (t < end)]
    if kept.empty:
        raise WorkloadError(
            f"no requests between {start:g} s and {end:g} s (the workload spans {_span(frame):.1f} s)",
            field="start_s" if duration is None else "duration_s",
        )
    kept = kept.assign(arrival_s=kept["arrival_s"] - start).reset_index(drop=True)
    return kept, [f"kept {len(kept)} of {len(frame)} requests arriving in [{start:g} s, {end:g} s)"]


def time_scale(frame: pd.DataFrame, step: Step) -> Result:
    factor = float(step["factor"])
    return frame.assign(arrival_s=frame["arrival_s"] / factor), []


def override_rate(frame: pd.DataFrame, step: Step) -> Result:
    """Same span, new mean rate: requests resampled from the source so the length mix stays the same.

    New arrivals are a gamma renewal process with the source's inter-arrival CV (or the given one), scaled so
    that the rate, 1 / mean gap = (requests - 1) / span, is exactly the one asked for. Resampled requests keep
    their source order (so Mooncake conversation turns stay in order) and their tenant, priority and prefix
    blocks.
    """
    rate, span = float(step["rate"]), _span(frame)
    if span <= 0:
        raise WorkloadError("the workload has no time span to spread a new rate over", field="rate")
    n_src = len(frame)
    if not rate * span < MAX_REQUESTS:
        what = f"{rate * span:.3g} requests over {span:.0f} s: more than a workload may hold ({MAX_REQUESTS:,})"
        raise WorkloadError(what, field="rate")
    n = round(rate * span) + 1
    cv = float(step["cv"]) if step.get("cv") is not None else _interarrival_cv(frame)
    rng = _rng(step)
    if n <= n_src:
        picks = rng.choice(n_src, n, replace=False)
    else:  # every source request once, the rest drawn with replacement
        picks = np.concatenate((np.arange(n_src), rng.choice(n_src, n - n_src)))
    process = ArrivalProcess("gamma", cv) if cv > 0 else ArrivalProcess("constant", 0.0)
    times = arrival_times(process, rate, rng, count=n)  # exactly `rate`: see arrival_times
    new = frame.iloc[np.sort(picks)].reset_index(drop=True).assign(arrival_s=times)
    note = (
        f"rate override: {n} requests at {rate:g} req/s over {(n - 1) / rate:.1f} s, resampled from {n_src} "
        f"(inter-arrival CV {cv:.2f})"
    )
    return new, [note]


def first(frame: pd.DataFrame, step: Step) -> Result:
    n = int(step["requests"])
    if n >= len(frame):
        return frame, []
    return frame.iloc[:n].reset_index(drop=True), [f"kept the first {n} of {len(frame)} requests"]


def sample(frame: pd.DataFrame, step: Step) -> Result:
    n = int(step["requests"])
    if n > len(frame):
        raise WorkloadError(f"cannot sample {n} requests from {len(frame)}; use rate to make more", field="requests")
    picks = np.sort(_rng(step).choice(len(frame), n, replace=False))
    note = f"sampled {n} of {len(frame)} requests (arrival times kept, so the mean rate falls to match)"
    return frame.iloc[picks].reset_index(drop=True), [note]


def clip(frame: pd.DataFrame, step: Step) -> Result:
    """Fit input + output into the context: shorten the prompt first, but never below half the context.

    input' = min(input, max(context - output, context // 2)); output' = min(output, context - input').
    Prefix blocks beyond the new prompt length are dropped.
    """
    context, block = int(step["max_context"]), int(step.get("block_tokens", 512))
    n_in, n_out = frame["input_tokens"].to_numpy(), frame["output_tokens"].to_numpy()
    new_in = np.minimum(n_in, np.maximum(context - n_out, context // 2))
    new_out = np.minimum(n_out, context - new_in)
    over = (new_in != n_in) | (new_out != n_out)
    if not over.any():
        return frame, []
    hashes = [h[: math.ceil(k / block)] for h, k in zip(frame["prefix_hash_ids"], new_in, strict=True)]
    new = frame.assign(
        input_tokens=new_in, output_tokens=new_out, prefix_hash_ids=pd.Series(hashes, dtype=object, index=frame.index)
    )
    note = (
        f"clipped {int(over.sum())} requests to max_context={context} ({int((new_in != n_in).sum())} prompts "
        f"and {int((new_out != n_out).sum())} outputs shortened)"
    )
    return new, [note]


STEPS: dict[str, Callable[[pd.DataFrame, Step], Result]] = {
    "spread_ties": spread_ties,
    "window": window,
    "time_scale": time_scale,
    "override_rate": override_rate,
    "first": first,
    "sample": sample,
    "clip": clip,
}
TIMED_STEPS = ("spread_ties", "window", "time_scale", "override_rate")


def apply_step(frame: pd.DataFrame, step: Step) -> Result:
    return STEPS[step["op"]](frame, step)
