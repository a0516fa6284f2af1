"""Sharded load generation, per worker: requests, offered vs achieved rate, schedule lag.

Offered: the worker's requests over the span of their scheduled times (what it was asked to send);
achieved: its successful requests over the span from its first send to its last finish. Lag: send time
minus scheduled time, the load generator's own lateness (coordinated-omission-safe latencies count it).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd


def worker_table(records: pd.DataFrame) -> list[dict[str, Any]]:
    """One row per load-generator worker of `records` (an engine run's); empty when nothing was sharded."""
    if "worker" not in records.columns or records["worker"].isna().all():
        return []
    rows = []
    for worker, group in records.groupby("worker"):
        ok = group[group["error_type"].isna()]
        scheduled = group["t_scheduled"].to_numpy(dtype=np.float64)
        span = float(scheduled.max() - scheduled.min()) if len(group) > 1 else 0.0
        busy = float(ok["t_finish"].max() - group["t_sent"].min()) if len(ok) else 0.0
        lag = (group["t_sent"] - group["t_scheduled"]).to_numpy(dtype=np.float64)
        lag = lag[np.isfinite(lag)]
        rows.append(
            {
                "worker": int(worker),
                "requests": len(group),
                "failed": len(group) - len(ok),
                "offered_rps": (len(group) - 1) / span if span > 0 else None,
                "achieved_rps": len(ok) / busy if busy > 0 else None,
                "lag_p50_ms": float(np.percentile(lag, 50)) * 1e3 if lag.size else None,
                "lag_p99_ms": float(np.percentile(lag, 99)) * 1e3 if lag.size else None,
                "lag_max_ms": float(lag.max()) * 1e3 if lag.size else None,
            }
        )
    return rows
