"""Across trials and across engines: the parts of metrics.json that look at more than one run."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics.latency import request_latencies
from harness.metrics.stats import t_quantile
from harness.metrics.summary import jsonable

# (name, path into a summary) for the headline numbers compared across repeated trials; every one is a
# latency, a rate or a share, so none can be negative and `slo_attainment` cannot exceed 1.
HEADLINE: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ttft_p50_s", ("latency", "ttft", "percentiles", "p50", "value")),
    ("ttft_p99_s", ("latency", "ttft", "percentiles", "p99", "value")),
    ("tpot_p50_s", ("latency", "tpot", "percentiles", "p50", "value")),
    ("tpot_p99_s", ("latency", "tpot", "percentiles", "p99", "value")),
    ("e2e_p50_s", ("latency", "e2e", "percentiles", "p50", "value")),
    ("e2e_p99_s", ("latency", "e2e", "percentiles", "p99", "value")),
    ("output_tok_s", ("throughput", "steady", "output_token_rate")),
    ("goodput_rps", ("slo", "goodput_rps_steady")),
    ("slo_attainment", ("slo", "attainment")),
)


def _dig(summary: dict[str, Any], path: tuple[str, ...]) -> float | None:
    value: Any = summary
    for key in path:
        if not isinstance(value, dict) or key not in value:
            return None
        value = value[key]
    return None if value is None else float(value)


BOUNDS: dict[str, tuple[float, float]] = {"slo_attainment": (0.0, 1.0)}  # default: [0, inf)


def mean_ci(
    values: Sequence[float], confidence: float = 0.95, bounds: tuple[float, float] = (0.0, float("inf"))
) -> dict[str, Any]:
    """Mean of per-trial values with a Student-t interval (trials are few and independent).

    The t-interval of two or three noisy trials easily reaches past what the metric can be (a TTFT p99
    "2230 ms, 95% CI -4707 to 9167 ms"), so it is cut to `bounds`, and `clipped` says it was.
    """
    x = np.asarray([v for v in values if v is not None and np.isfinite(v)], dtype=float)
    if x.size == 0:
        return {"mean": None, "ci_low": None, "ci_high": None, "values": [], "n": 0, "clipped": False}
    mean = float(x.mean())
    if x.size < 2:
        return {"mean": mean, "ci_low": None, "ci_high": None, "values": x.tolist(), "n": 1, "clipped": False}
    half = float(t_quantile(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / np.sqrt(x.size))
    low, high = max(mean - half, bounds[0]), min(mean + half, bounds[1])
    return {
        "mean": mean,
        "ci_low": low,
        "ci_high": high,
        "values": x.tolist(),
        "n": int(x.size),
        "clipped": bool(low != mean - half or high != mean + half),
    }


def repeat_summary(runs: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per engine, per headline metric: mean and 95% CI across trials."""
    by_engine: dict[str, list[dict[str, Any]]] = {}
    for run in runs:
        by_engine.setdefault(run["engine"], []).append(run["summary"])
    return {
        engine: {
            name: mean_ci([_dig(s, path) for s in summaries], bounds=BOUNDS.get(name, (0.0, float("inf"))))
            for name, path in HEADLINE
        }
        for engine, summaries in by_engine.items()
    }


def compare_engines(
    records: pd.DataFrame, engines: list[str], *, seed: int = 0, closed_loop: bool = False
) -> dict[str, Any]:
    """The first engine is the baseline; every other one is compared with it on trial 0 by the judge
    (harness.judge.comparison: the table `compare` and the report show too). `closed_loop`: the send times
    followed each engine's pace (a closed loop, a multi-turn replay), so the pairing does not compare them
    (harness.judge.pairing)."""
    from harness.judge.comparison import ALPHA, compare_latencies
    from harness.judge.pairing import Side

    if len(engines) < 2:
        return {}
    trial0 = records[records["trial"] == 0]
    base = trial0[trial0["engine"] == engines[0]]
    out: dict[str, Any] = {"baseline": engines[0], "alpha": ALPHA, "pairs": {}}
    for other in engines[1:]:
        cand = trial0[trial0["engine"] == other]
        sides = Side(base, closed_loop), Side(cand, closed_loop)
        judged = compare_latencies(*sides, request_latencies(base), request_latencies(cand), seed=seed)
        table = judged.table
        out["pairs"][other] = {
            "kind": judged.kind,
            "reason": judged.reason,
            "quantity": judged.quantity,
            "paired_requests": judged.paired_requests,
            "paired_on": judged.paired_on,
            "only_in_baseline": judged.only_in_a,
            "only_in_candidate": judged.only_in_b,
            "deltas": {
                m: {
                    "median_a": row["median_a"],
                    "median_b": row["median_b"],
                    "median_delta": row["delta"],
                    "ci_low": row["ci_low"],
                    "ci_high": row["ci_high"],
                    "share_b_lower": row["effect"] if judged.kind == "paired" else None,
                    "test": row["test"],
                    "p_value": row["p_value"],
                    "p_holm": row["p_holm"],
                    "verdict": row["verdict"],
                }
                for m, row in table.iterrows()
            },
        }
    return jsonable(out)
