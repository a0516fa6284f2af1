"""Multi-turn metrics: TTFT by turn index and end-to-end time per session (records in, tables out).

A session's E2E is its job time (`harness.metrics.jobs`): from its first turn's scheduled time to its last
turn's finish, think times included. Both are None for records without sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.jobs import job_spans
from harness.metrics.latency import request_latencies


def _pcts(values: pd.Series, qs: Sequence[float]) -> dict[str, float | None]:
    v = values.dropna().to_numpy(dtype=float)
    return {f"p{q:g}": (float(np.percentile(v, q)) if len(v) else None) for q in qs}


def ttft_by_turn(records: pd.DataFrame, qs: Sequence[float] = (50, 99)) -> list[dict[str, Any]] | None:
    """One row per turn index: requests, succeeded, mean prompt and cached tokens, TTFT percentiles."""
    if "turn" not in records or records["turn"].isna().all():
        return None
    lat = request_latencies(records)
    lat = lat.assign(turn=records["turn"].to_numpy(), cached=records["cached_tokens"].to_numpy())
    rows = []
    for turn, group in lat.dropna(subset=["turn"]).groupby("turn", sort=True):
        ok = group[group["succeeded"]]
        rows.append(
            {
                "turn": int(turn),
                "requests": len(group),
                "succeeded": len(ok),
                "prompt_tokens_mean": float(group["prompt_tokens"].mean()),
                "cached_tokens_mean": float(group["cached"].mean()) if group["cached"].notna().any() else None,
                **{f"ttft_{k}": v for k, v in _pcts(ok["ttft"], qs).items()},
            }
        )
    return rows


def session_e2e(records: pd.DataFrame, qs: Sequence[float] = (50, 90, 99)) -> dict[str, Any] | None:
    """Sessions, how many had every turn succeed, and percentiles of their end-to-end seconds."""
    if "session" not in records or records["session"].isna().all():
        return None
    jobs = job_spans(records)
    assert jobs is not None  # records with sessions have jobs
    return {
        "sessions": len(jobs),
        "complete": int(jobs["complete"].sum()),
        "turns_mean": float(jobs["requests"].mean()),
        **{f"e2e_{k}_s": v for k, v in _pcts(jobs.loc[jobs["complete"], "job_s"], qs).items()},
    }
