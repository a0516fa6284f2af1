"""Paired comparison of two engines run on the identical schedule.

Pairing on request_id removes the request-to-request variation (prompt and output lengths,
arrival time) that dominates an unpaired comparison, so far smaller differences are detectable.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from harness.metrics.latency import request_latencies
from harness.metrics.stats import DEFAULT_CONFIDENCE, DEFAULT_N_BOOT, bootstrap_ci, percentiles
from harness.records import RecordError

PAIRED_METRICS: tuple[str, ...] = ("ttft", "tpot", "e2e", "queue_delay", "normalized_latency")


def paired_deltas(
    a: pd.DataFrame,
    b: pd.DataFrame,
    *,
    metrics: Sequence[str] = PAIRED_METRICS,
    check_schedule: bool = True,
    atol: float = 1e-6,
) -> pd.DataFrame:
    """Per request in both runs: `{m}_a`, `{m}_b`, `{m}_delta` (= b - a) and `{m}_ratio` (= b / a),
    plus `succeeded_a` / `succeeded_b`. Rows are the inner join on request_id; the ids found in
    only one run are listed in `attrs["only_in_a"]` / `attrs["only_in_b"]`.

    Raises RecordError if a shared request was scheduled at different times (the runs did
    not use the same schedule, so pairing them would be meaningless), unless `check_schedule` is off.
    Closed-loop records (those with a `user`) pair on request and user instead: there the scheduled
    time is when the user was ready, which follows each engine's own pace, while each user sends the
    same requests in the same order in both runs.
    """
    la, lb = request_latencies(a), request_latencies(b)
    for name, lat in (("a", la), ("b", lb)):
        if lat["request_id"].duplicated().any():
            raise RecordError(f"run {name} has duplicate request_ids; pair one trial at a time")
    closed = _users(a) is not None and _users(b) is not None
    key = ["request_id", "user"] if closed else ["request_id"]
    if closed:
        la, lb = la.assign(user=_users(a).to_numpy()), lb.assign(user=_users(b).to_numpy())  # type: ignore[union-attr]
    cols = [*key, "t_scheduled", "succeeded", *metrics]
    joined = la[cols].merge(lb[cols], on=key, suffixes=("_a", "_b"), how="inner")
    if check_schedule and not closed:
        drift = (joined["t_scheduled_a"] - joined["t_scheduled_b"]).abs() > atol
        if drift.any():
            first = joined.loc[drift, "request_id"].iloc[0]
            raise RecordError(
                f"{int(drift.sum())} request(s) scheduled at different times in the two runs (e.g. {first})"
            )
    out = joined[["request_id", "t_scheduled_a", "succeeded_a", "succeeded_b"]].rename(
        columns={"t_scheduled_a": "t_scheduled"}
    )
    for m in metrics:
        out[f"{m}_a"], out[f"{m}_b"] = joined[f"{m}_a"], joined[f"{m}_b"]
        out[f"{m}_delta"] = joined[f"{m}_b"] - joined[f"{m}_a"]
        out[f"{m}_ratio"] = joined[f"{m}_b"] / joined[f"{m}_a"].where(joined[f"{m}_a"] != 0)
    # ids as a list first: iterating a column of pandas strings makes each a Python string one call at a time
    paired = set(joined["request_id"].tolist())
    out.attrs["only_in_a"] = sorted(set(la["request_id"].tolist()) - paired)
    out.attrs["only_in_b"] = sorted(set(lb["request_id"].tolist()) - paired)
    out.attrs["paired_on"] = key
    return out


def _users(records: pd.DataFrame) -> pd.Series | None:
    """The closed-loop user of every record, or None when the run was open loop (no record has one)."""
    if "user" not in records.columns:
        return None
    users = pd.to_numeric(records["user"], errors="coerce")
    return users.reset_index(drop=True) if users.notna().all() and len(users) else None


def paired_summary(
    deltas: pd.DataFrame,
    *,
    metrics: Sequence[str] = PAIRED_METRICS,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    seed: int = 0,
) -> pd.DataFrame:
    """Per metric, over requests where both values are defined: n, median and mean of b - a with
    bootstrap CIs, the median ratio b / a, and the share of requests where b was lower (better)."""
    rows = {}
    for m in metrics:
        d = deltas[f"{m}_delta"].to_numpy(dtype=np.float64)
        d = d[np.isfinite(d)]
        med = percentiles(d, (50.0,), n_boot=n_boot, confidence=confidence, seed=seed).iloc[0]
        mean_lo, mean_hi = bootstrap_ci(d, np.mean, n_boot=n_boot, confidence=confidence, seed=seed)
        ratio = deltas[f"{m}_ratio"].to_numpy(dtype=np.float64)
        ratio = ratio[np.isfinite(ratio)]
        rows[m] = {
            "n": int(d.size),
            "median_delta": med["value"],
            "median_delta_ci_low": med["ci_low"],
            "median_delta_ci_high": med["ci_high"],
            "mean_delta": float(d.mean()) if d.size else np.nan,
            "mean_delta_ci_low": mean_lo,
            "mean_delta_ci_high": mean_hi,
            "median_ratio": float(np.median(ratio)) if ratio.size else np.nan,
            "share_b_lower": float((d < 0).mean()) if d.size else np.nan,
        }
    table = pd.DataFrame.from_dict(rows, orient="index")
    table.index.name = "metric"
    return table
