"""How busy the engine's batch was, from its step trace (one row per engine step).

Shares are time-weighted by step duration (t_end - t_start): a long prefill step at half
occupancy matters more than a short decode step at full. An engine records only the steps it
computes, so the time it spends waiting for arrivals (or, static, for a batch to form) is the gaps
between steps: `idle_time_share` is the share of the trace's span no step covers, and it never
reads as batching waste in the slot shares. If every duration is zero (a trace without timings)
steps are weighted equally instead.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.frame import list_lengths

PHASES = ("prefill", "decode", "mixed")


def _weights(steps: pd.DataFrame) -> pd.Series:
    dur = (steps["t_end"] - steps["t_start"]).clip(lower=0.0).fillna(0.0)
    return dur if dur.sum() > 0 else pd.Series(1.0, index=steps.index)


def _weighted_mean(values: pd.Series, weights: pd.Series) -> float | None:
    ok = values.notna()
    w = weights[ok]
    if w.sum() <= 0:
        return None
    return float((values[ok] * w).sum() / w.sum())


def phase_table(steps: pd.DataFrame) -> pd.DataFrame:
    """Per phase: steps, seconds, share of time, tokens computed, padded tokens."""
    dur = (steps["t_end"] - steps["t_start"]).clip(lower=0.0)
    table = (
        steps.assign(seconds=dur)
        .groupby("phase")
        .agg(
            steps=("step", "size"),
            seconds=("seconds", "sum"),
            tokens_computed=("tokens_computed", "sum"),
            padded_tokens=("padded_tokens", "sum"),
        )
        .reindex(PHASES, fill_value=0)
    )
    total = table["seconds"].sum()
    table["time_share"] = table["seconds"] / total if total > 0 else np.nan
    return table


def utilisation(steps: pd.DataFrame) -> dict[str, Any]:
    """Slot occupancy, idle/padded waste, KV-cache use, preemptions and steps by phase."""
    if steps.empty:
        return {"steps": 0}
    w = _weights(steps)
    slots = steps["max_slots"].where(steps["max_slots"] > 0).astype("float64")
    kv = steps["kv_blocks_used"] / steps["kv_blocks_total"].where(steps["kv_blocks_total"] > 0)
    computed = int(steps["tokens_computed"].sum())
    padded = int(steps["padded_tokens"].sum())
    phases = phase_table(steps)
    blocked = steps["blocked_reason"].dropna().value_counts()
    span = float(steps["t_end"].max() - steps["t_start"].min())
    busy = float((steps["t_end"] - steps["t_start"]).clip(lower=0.0).sum())
    return {
        "steps": len(steps),
        "trace_seconds": span,
        "idle_time_share": max(0.0, 1.0 - busy / span) if span > 0 else None,
        "mean_running_share": _weighted_mean(steps["num_running"] / slots, w),
        "idle_slot_share": _weighted_mean(steps["idle_slots"] / slots, w),
        "padded_token_share": padded / (computed + padded) if computed + padded else None,
        "tokens_computed": computed,
        "padded_tokens": padded,
        "kv_use_mean": _weighted_mean(kv, w),
        "kv_use_max": None if kv.dropna().empty else float(kv.max()),
        "preemptions": int(list_lengths(steps["preempted"]).sum()),
        "max_waiting": int(steps["waiting"].max()),
        "steps_by_phase": {p: int(phases.at[p, "steps"]) for p in PHASES},
        "seconds_by_phase": {p: float(phases.at[p, "seconds"]) for p in PHASES},
        "steps_by_blocked_reason": {str(k): int(v) for k, v in blocked.items()},
    }
