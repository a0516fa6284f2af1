"""Fairness between tenants: Jain's index, p99 slowdown spread, VTC service gap, starvation.

Service follows the Virtual Token Counter paper (Sheng et al., OSDI '24): 1 unit per prompt token
and 2 per output token. Prompt tokens are credited when the request's first token arrives (prefill
is then known to be done), output tokens at their own arrival times. A tenant is backlogged from
the scheduled arrival of any of its requests until that request is done (finish, else last token,
else send); overlapping requests merge into one backlogged interval.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import combinations
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.frame import flatten_token_times
from harness.metrics.latency import admission_unseen, done_time, request_latencies

INPUT_WEIGHT = 1.0
OUTPUT_WEIGHT = 2.0


def jain_index(values: Sequence[float] | np.ndarray | pd.Series) -> float:
    """(sum x)^2 / (n * sum x^2): 1 when all shares are equal, 1/n when one party gets everything.

    NaN values are dropped; NaN for no values or all zeros (nobody got anything: undefined).
    """
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0 or not np.any(x):
        return float("nan")
    x = x / np.abs(x).max()  # the index is scale-free; this keeps tiny or huge values from under/overflowing
    return float(x.sum() ** 2 / (x.size * np.square(x).sum()))


def _service_arrays(
    records: pd.DataFrame, input_weight: float, output_weight: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[str]]:
    """(times, service increments, tenant codes, tenant names), sorted by time.

    Integer tenant codes instead of strings keep this fast for millions of tokens; sorting once
    here lets every tenant pair be cut out with a mask instead of re-sorted.
    """
    flat, owner = flatten_token_times(records["token_times"])
    codes, names = pd.factorize(records["tenant"], sort=True)
    prefilled = records["t_first_token"].notna().to_numpy()
    code = np.concatenate([codes[owner], codes[prefilled]])
    t = np.concatenate([flat, records["t_first_token"].to_numpy(dtype=np.float64)[prefilled]])
    w = np.concatenate(
        [
            np.full(flat.size, output_weight),
            input_weight * records["prompt_tokens"].to_numpy(dtype=np.float64)[prefilled],
        ]
    )
    order = np.argsort(t, kind="stable")
    return t[order], w[order], code[order], [str(n) for n in names]


def service_events(
    records: pd.DataFrame, *, input_weight: float = INPUT_WEIGHT, output_weight: float = OUTPUT_WEIGHT
) -> pd.DataFrame:
    """Every service increment: tenant, t, service; sorted by time. All records count (service
    delivered to a request that later failed was still delivered)."""
    t, w, code, names = _service_arrays(records, input_weight, output_weight)
    return pd.DataFrame({"tenant": np.asarray(names, dtype=object)[code], "t": t, "service": w})


def _merge_intervals(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(starts, kind="stable")
    s, e = starts[order], ends[order]
    if s.size == 0:
        return s, e
    reach = np.maximum.accumulate(e)
    new = np.empty(s.size, dtype=bool)
    new[0] = True
    new[1:] = s[1:] > reach[:-1]
    heads = np.flatnonzero(new)
    return s[heads], np.maximum.reduceat(e, heads)


def backlog_intervals(records: pd.DataFrame) -> pd.DataFrame:
    """Per tenant, the merged intervals during which it had a request arrived and not done."""
    done = done_time(records).to_numpy(dtype=np.float64)
    sched = records["t_scheduled"].to_numpy(dtype=np.float64)
    parts = []
    for tenant, idx in records.groupby("tenant", sort=True).indices.items():
        s, e = _merge_intervals(sched[idx], np.maximum(done[idx], sched[idx]))
        parts.append(pd.DataFrame({"tenant": tenant, "start": s, "end": e}))
    if not parts:
        return pd.DataFrame({"tenant": pd.Series(dtype="str"), "start": [], "end": []})
    return pd.concat(parts, ignore_index=True)


def tenant_service(
    records: pd.DataFrame, *, input_weight: float = INPUT_WEIGHT, output_weight: float = OUTPUT_WEIGHT
) -> pd.DataFrame:
    """Per tenant: service received, seconds backlogged, and service per backlogged second.

    The rate is the "normalized service" Jain's index is taken over: tenants that send more or
    longer requests are backlogged longer, so raw totals would punish legitimate demand, while the
    rate asks whether tenants competing for the engine were served at the same speed.
    """
    # totals need no token's time: a request's count of tokens, and its prompt once its first token came
    codes, names = pd.factorize(records["tenant"], sort=True)
    tokens = np.fromiter(map(len, records["token_times"]), dtype=np.int64, count=len(records))
    prompts = records["prompt_tokens"].to_numpy(dtype=np.int64) * records["t_first_token"].notna().to_numpy()
    total = output_weight * np.bincount(codes, weights=tokens, minlength=len(names))
    total += input_weight * np.bincount(codes, weights=prompts, minlength=len(names))
    service = pd.Series(total, index=[str(n) for n in names], dtype="float64")
    backlog = backlog_intervals(records)
    backlogged = (backlog["end"] - backlog["start"]).groupby(backlog["tenant"]).sum()
    table = pd.DataFrame({"backlogged_s": backlogged})
    table["service"] = service.reindex(table.index).fillna(0.0)
    table["service_rate"] = table["service"] / table["backlogged_s"].where(table["backlogged_s"] > 0)
    table.index.name = "tenant"
    return table[["service", "backlogged_s", "service_rate"]]


def _intersect(a: pd.DataFrame, b: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Positive-length intersections of two sorted, disjoint interval lists."""
    a_s, a_e = a["start"].to_numpy(), a["end"].to_numpy()
    b_s, b_e = b["start"].to_numpy(), b["end"].to_numpy()
    lo = np.searchsorted(b_e, a_s, side="left")
    hi = np.searchsorted(b_s, a_e, side="right")
    counts = np.maximum(hi - lo, 0)
    ia = np.repeat(np.arange(a_s.size), counts)
    ib = np.concatenate([np.arange(x, y) for x, y in zip(lo, hi, strict=True) if y > x] or [np.empty(0, int)])
    starts = np.maximum(a_s[ia], b_s[ib])
    ends = np.minimum(a_e[ia], b_e[ib])
    keep = ends > starts
    return starts[keep], ends[keep]


def _pair_gap(t: np.ndarray, d_step: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> tuple[float, float, float]:
    """Largest |service_i - service_j| over any sub-interval of a co-backlogged interval.

    `t` is sorted and `d_step` holds +service for tenant i, -service for j. With D(t) the running
    sum (W_i - W_j), the service difference over [t1, t2] is D(t2) - D(t1), so inside one
    co-backlogged interval its maximum is max D - min D.
    """
    if starts.size == 0:
        return 0.0, float("nan"), float("nan")
    d = np.cumsum(d_step)
    # Tokens of one engine step can share a timestamp; only the value after the whole step is real.
    settled = np.ones(t.size, dtype=bool)
    settled[:-1] = t[1:] != t[:-1]
    t, d = t[settled], d[settled]
    base_idx = np.searchsorted(t, starts, side="right") - 1
    base = np.where(base_idx >= 0, d[np.maximum(base_idx, 0)], 0.0) if t.size else np.zeros(starts.size)
    hi, lo = base.copy(), base.copy()
    k = np.searchsorted(starts, t, side="left") - 1
    inside = (k >= 0) & (t <= ends[np.maximum(k, 0)])
    np.maximum.at(hi, k[inside], d[inside])
    np.minimum.at(lo, k[inside], d[inside])
    spread = hi - lo
    best = int(np.argmax(spread))
    return float(spread[best]), float(starts[best]), float(ends[best])


def vtc_gap(
    records: pd.DataFrame, *, input_weight: float = INPUT_WEIGHT, output_weight: float = OUTPUT_WEIGHT
) -> dict[str, Any]:
    """The VTC fairness gap: max over tenant pairs and over intervals [t1, t2] during which both were
    backlogged throughout of |service_i(t1, t2) - service_j(t1, t2)|, in service units.

    This is the quantity the VTC paper bounds for its scheduler (by a small multiple of the largest
    single request's service, under its assumptions). Measuring it only while both are backlogged
    means a tenant that simply arrived later or asked for less is not counted as treated unfairly.
    "gap" is None with fewer than two tenants.
    """
    result: dict[str, Any] = {"gap": None, "tenants": None, "interval": None}
    if records["tenant"].nunique() < 2:  # before the service arrays: a trace's every token, sorted
        return result
    t, w, code, names = _service_arrays(records, input_weight, output_weight)
    backlog = backlog_intervals(records)
    intervals = {name: g.sort_values("start") for name, g in backlog.groupby("tenant")}
    best: tuple[float, tuple[str, str] | None, tuple[float, float] | None] = (-1.0, None, None)
    for (i, a), (j, b) in combinations(enumerate(names), 2):
        starts, ends = _intersect(intervals[a], intervals[b])
        mine, theirs = code == i, code == j
        pair = mine | theirs
        gap, s, e = _pair_gap(t[pair], np.where(mine, w, -w)[pair], starts, ends)
        if gap > best[0]:
            best = (gap, (a, b), None if np.isnan(s) else (s, e))
    gap, tenants, interval = best
    return {
        "gap": gap,
        "tenants": list(tenants) if tenants else None,
        "interval": list(interval) if interval else None,
    }


def starvation(records: pd.DataFrame) -> dict[str, Any]:
    """Longest wait from scheduled arrival to admission, over every admitted request (failed ones
    too: a wait is a wait), plus requests never admitted and the longest they were seen waiting."""
    wait = records["t_admitted"] - records["t_scheduled"]
    never = records["t_admitted"].isna()
    out: dict[str, Any] = {
        "max_queue_delay_s": None,
        "request_id": None,
        "tenant": None,
        "never_admitted": int(never.sum()),
        "never_admitted_max_wait_s": None,
    }
    unseen = admission_unseen(records)
    if unseen:  # no admission was seen: "never admitted" would count every request
        return {**out, "never_admitted": None, "measured": False, "reason": unseen}
    if wait.notna().any():
        i = wait.idxmax()
        out.update(
            max_queue_delay_s=float(wait[i]),
            request_id=str(records.at[i, "request_id"]),
            tenant=str(records.at[i, "tenant"]),
        )
    if never.any():
        out["never_admitted_max_wait_s"] = float((done_time(records) - records["t_scheduled"])[never].max())
    return out


def fairness(
    records: pd.DataFrame, *, input_weight: float = INPUT_WEIGHT, output_weight: float = OUTPUT_WEIGHT
) -> dict[str, Any]:
    """Jain's index over per-tenant service rates, max/min per-tenant p99 slowdown, VTC gap, starvation."""
    service = tenant_service(records, input_weight=input_weight, output_weight=output_weight)
    lat = request_latencies(records)
    p99 = lat.groupby("tenant")["slowdown"].quantile(0.99).dropna()
    jain = jain_index(service["service_rate"])
    return {
        "tenants": int(service.shape[0]),
        "jain_index": None if np.isnan(jain) else jain,
        "p99_slowdown_by_tenant": {str(k): float(v) for k, v in p99.items()},
        "p99_slowdown_max_min_ratio": float(p99.max() / p99.min()) if len(p99) else None,
        "vtc_gap": vtc_gap(records, input_weight=input_weight, output_weight=output_weight),
        "starvation": starvation(records),
        "weights": {"input": input_weight, "output": output_weight},
    }
