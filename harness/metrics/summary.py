"""One engine run's records (and step trace) in, one JSON-serialisable summary dict out.

The dict is the contract with reports and the CI gate: it carries `schema_version`, holds only
dicts, lists, str, int, float, bool and None (NaN and inf become None), and never depends on
anything but its arguments, so the same inputs and seed give the same bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from harness.errors import HarnessInputError
from harness.metrics.cost import DEFAULT_PRICE_PER_HOUR, cost
from harness.metrics.fairness import fairness
from harness.metrics.frame import flatten_token_times
from harness.metrics.jobs import JOB_PERCENTILES, job_completion
from harness.metrics.latency import (
    CENSORED_METRICS,
    LATENCY_COLUMNS,
    QUEUEING_METRICS,
    admission_unseen,
    inter_token_latencies,
    request_latencies,
    succeeded,
)
from harness.metrics.prefix_cache import measured_hit_rate
from harness.metrics.reasoning import reasoning_summary
from harness.metrics.replicas import replica_summary
from harness.metrics.server_series import as_step_frame, server_summary
from harness.metrics.serving_path import serving_path_summary
from harness.metrics.sessions import session_e2e, ttft_by_turn
from harness.metrics.slo import DEFAULT_SLO, SLO, goodput
from harness.metrics.slo_classes import SLOClass, per_class
from harness.metrics.spec_decode import spec_decode_summary
from harness.metrics.stats import DEFAULT_CONFIDENCE, DEFAULT_N_BOOT, DEFAULT_PERCENTILES, describe
from harness.metrics.tenants import tenant_table
from harness.metrics.throughput import DEFAULT_WARMUP_FRACTION, run_window, run_windows, send_rates, throughput
from harness.metrics.utilisation import utilisation
from harness.metrics.validity import DEFAULT_LAG_THRESHOLD_S, validity
from harness.metrics.warnings import early_warnings

SUMMARY_SCHEMA_VERSION = 1

_LATENCY_METRICS = LATENCY_COLUMNS


def jsonable(value: Any) -> Any:
    """Plain-Python copy of `value` that `json.dumps(..., allow_nan=False)` accepts."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | np.ndarray | pd.Series):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, str):
        return value
    return str(value)


def _single(records: pd.DataFrame, column: str) -> Any:
    values = records[column].dropna().unique()
    if len(values) > 1:
        raise HarnessInputError(
            f"summarize takes one run, but the records hold {len(values)} values of {column!r} "
            f"({', '.join(map(str, values[:5]))}); split them first, e.g. with summarize_by_engine"
        )
    return values[0] if len(values) else None


def _wall_time(
    records: pd.DataFrame, steps: pd.DataFrame | None, wall_time_s: float | None
) -> tuple[float | None, str]:
    if wall_time_s is not None:
        return wall_time_s, "argument"
    if steps is not None and not steps.empty:
        return float(steps["t_end"].max() - steps["t_start"].min()), "step_trace"
    window = run_window(records)
    return (window.duration_s, "records") if window else (None, "none")


def summarize(
    records_df: pd.DataFrame,
    steps_df: pd.DataFrame | None = None,
    *,
    slo: SLO = DEFAULT_SLO,
    price_per_hour: float = DEFAULT_PRICE_PER_HOUR,
    accelerators: int = 1,
    wall_time_s: float | None = None,
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
    lag_threshold_s: float = DEFAULT_LAG_THRESHOLD_S,
    server_rows: list[dict[str, Any]] | None = None,
    slo_classes: Sequence[SLOClass] = (),
) -> dict[str, Any]:
    """Every metric of one engine run (one engine, one trial) as a JSON-serialisable dict.

    `wall_time_s` is the engine run's wall time for cost; when None it falls back to the step
    trace's span, then to the records' span (first scheduled arrival to last completion), and
    `cost.wall_time_source` says which was used.
    """
    records, steps = records_df, steps_df
    engine = _single(records, "engine")
    trial = _single(records, "trial")
    lat = request_latencies(records)
    ok = lat["succeeded"]
    stats_kw: dict[str, Any] = {"qs": percentiles, "n_boot": n_boot, "confidence": confidence, "seed": seed}
    latency = _latency(lat, stats_kw, _LATENCY_METRICS)
    latency["itl"] = describe(inter_token_latencies(records), **stats_kw)
    unseen = admission_unseen(records)
    for m in QUEUEING_METRICS if unseen else ():  # null, not the send time taken as admission (0 queueing)
        latency[m].update(measured=False, reason=unseen)
    slo_result = goodput(records, slo, warmup_fraction=warmup_fraction)
    wall, wall_source = _wall_time(records, steps, wall_time_s)
    run_cost = cost(
        wall,
        output_tokens=int(lat.loc[ok, "output_tokens"].sum()),
        good_requests=slo_result["met"],
        price_per_hour=price_per_hour,
        accelerators=accelerators,
    )
    run_cost["wall_time_source"] = wall_source
    tenants = tenant_table(records, slo)
    ok_token_times, _ = flatten_token_times(records.loc[succeeded(records), "token_times"])  # once for every window
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "engine": engine,
        "trial": trial,
        "requests": {
            "total": len(records),
            "succeeded": int(ok.sum()),
            "failed": int((~ok).sum()),
            "failures_by_type": records["error_type"].dropna().value_counts().sort_index().to_dict(),
            "finish_reasons": records["finish_reason"].fillna("none").value_counts().sort_index().to_dict(),
            "output_tokens": int(records["output_tokens"].sum()),
            "prompt_tokens": int(records["prompt_tokens"].sum()),
            # None where the engine could not see them (an HTTP target; its scrape's `server.preemptions` counts
            # them): a figure the client cannot know is n/a, never 0
            "preemptions": None if records["preemptions"].isna().any() else int(records["preemptions"].sum()),
        },
        "latency": latency,
        "schedule_lag": describe(lat["schedule_lag"], **stats_kw),
        "load": send_rates(records),
        "throughput": {
            name: throughput(records, window, kind=name, token_times=ok_token_times)
            for name, window in run_windows(records, warmup_fraction=warmup_fraction).items()
        },
        "slo": slo_result,
        "slo_classes": per_class(records, slo_classes, warmup_fraction=warmup_fraction, confidence=confidence),
        "tenants": {str(t): row for t, row in tenants.to_dict(orient="index").items()},
        "fairness": fairness(records),
        "utilisation": None if steps is None else utilisation(steps),
        "prefix_cache": measured_hit_rate(records),
        "reasoning": reasoning_summary(records, **stats_kw),
        "spec_decode": spec_decode_summary(records),  # per request, from the engine's counts; None without
        "replicas": replica_summary(records),  # which replica answered each request (a cluster, a real fleet)
        "serving_path": serving_path_summary(records),  # client TTFT - the server's own, where the server said
        "sessions": _sessions(records),
        "jobs": job_completion(records, slo.job_s, **{**stats_kw, "qs": JOB_PERCENTILES}),
        "cost": run_cost,
        "validity": validity(records, lag_threshold_s=lag_threshold_s),
        # an HTTP target's engine view comes from its scraped series (harness.metrics.server_series)
        "warnings": early_warnings(
            records, steps if steps is not None or not server_rows else as_step_frame(server_rows), slo
        ),
        "server": None if server_rows is None else server_summary(server_rows),
        "parameters": {
            "seed": seed,
            "n_boot": n_boot,
            "confidence": confidence,
            "percentiles": list(percentiles),
            "warmup_fraction": warmup_fraction,
            "lag_threshold_s": lag_threshold_s,
        },
    }
    return jsonable(summary)


def headline_summary(
    records_df: pd.DataFrame,
    *,
    seed: int = 0,
    n_boot: int = DEFAULT_N_BOOT,
    confidence: float = DEFAULT_CONFIDENCE,
    percentiles: Sequence[float] = DEFAULT_PERCENTILES,
    warmup_fraction: float = DEFAULT_WARMUP_FRACTION,
) -> dict[str, Any]:
    """The part of `summarize`'s dict that fidelity reads (`harness.metrics.simulation.FIDELITY_METRICS`): TTFT,
    TPOT and E2E under "latency" and the steady window under "throughput", computed as `summarize` computes
    them (the same helpers and arguments, so the same numbers). A twin of a fidelity suite needs no more, and the
    rest of a summary (tenants, fairness, goodput, utilisation, ...) is most of its cost."""
    records = records_df
    lat = request_latencies(records)
    stats_kw: dict[str, Any] = {"qs": percentiles, "n_boot": n_boot, "confidence": confidence, "seed": seed}
    steady = run_windows(records, warmup_fraction=warmup_fraction)["steady"]
    ok_token_times, _ = flatten_token_times(records.loc[succeeded(records), "token_times"])
    summary = {
        "schema_version": SUMMARY_SCHEMA_VERSION,
        "engine": _single(records, "engine"),
        "trial": _single(records, "trial"),
        "latency": _latency(lat, stats_kw, ("ttft", "tpot", "e2e")),
        "throughput": {"steady": throughput(records, steady, kind="steady", token_times=ok_token_times)},
    }
    return jsonable(summary)


def _latency(lat: pd.DataFrame, stats_kw: Mapping[str, Any], metrics: Sequence[str]) -> dict[str, Any]:
    """Each metric described once; in CENSORED_METRICS the requests cut off while they waited count, as lower
    bounds (harness.metrics.latency)."""
    return {
        m: describe(lat[f"{m}_or_wait"], censored=lat[f"{m}_censored"], **stats_kw)
        if m in CENSORED_METRICS
        else describe(lat[m], **stats_kw)
        for m in metrics
    }


def _sessions(records: pd.DataFrame) -> dict[str, Any] | None:
    by_turn = ttft_by_turn(records)
    return None if by_turn is None else {"ttft_by_turn": by_turn, "e2e": session_e2e(records)}


def summarize_by_engine(
    records: pd.DataFrame, steps: Mapping[str, pd.DataFrame] | None = None, **kwargs: Any
) -> dict[str, dict[str, Any]]:
    """`summarize` per value of the `engine` column; `steps` maps engine label to its step trace."""
    return {
        str(engine): summarize(group, (steps or {}).get(str(engine)), **kwargs)
        for engine, group in records.groupby("engine", sort=True)
    }


def _pct(summary: Mapping[str, Any], metric: str, label: str) -> float | None:
    return summary["latency"][metric]["percentiles"].get(label, {}).get("value")


def _at_least(summary: Mapping[str, Any], metric: str, label: str) -> bool:
    """Whether that percentile is only a lower bound (requests cut off while waiting reach it)."""
    return bool(summary["latency"][metric]["percentiles"].get(label, {}).get("lower_bound"))


def summary_table(summaries: Sequence[Mapping[str, Any]] | Mapping[str, Mapping[str, Any]]) -> pd.DataFrame:
    """One row per summary, a handful of headline columns, for console display."""
    items = summaries.values() if isinstance(summaries, Mapping) else summaries
    rows = []
    for s in items:
        steady = s["throughput"]["steady"]
        util = s.get("utilisation") or {}
        rows.append(
            {
                "engine": s["engine"],
                "requests": s["requests"]["total"],
                "failed": s["requests"]["failed"],
                "ttft_p50_s": _pct(s, "ttft", "p50"),
                "ttft_p99_s": _pct(s, "ttft", "p99"),
                "tpot_p50_s": _pct(s, "tpot", "p50"),
                "tpot_p99_s": _pct(s, "tpot", "p99"),
                "itl_p99_s": _pct(s, "itl", "p99"),
                "e2e_p99_s": _pct(s, "e2e", "p99"),
                "ttft_p50_s_at_least": _at_least(s, "ttft", "p50"),
                "ttft_p99_s_at_least": _at_least(s, "ttft", "p99"),
                "e2e_p99_s_at_least": _at_least(s, "e2e", "p99"),
                "ttft_censored": s["latency"]["ttft"].get("censored", 0),
                "offered_rps": s.get("load", {}).get("offered_rate_rps"),
                "sent_rps": s.get("load", {}).get("send_rate_rps"),
                "req_per_s": steady["request_rate"],
                "out_tok_per_s": steady["output_token_rate"],
                "rate_reason": (steady.get("reasons") or {}).get("output_token_rate"),
                "slo_attainment": s["slo"]["attainment"],
                "goodput_rps": s["slo"]["goodput_rps_steady"],
                "goodput_reason": s["slo"].get("goodput_rps_steady_reason"),
                "jain": s["fairness"]["jain_index"],
                "vtc_gap": s["fairness"]["vtc_gap"]["gap"],
                "slot_use": util.get("mean_running_share"),
                "padded_share": util.get("padded_token_share"),
                "usd_per_1m_out": s["cost"]["usd_per_1m_output_tokens"],
                "usd_per_1k_good": s["cost"]["usd_per_1k_good_requests"],
                "flags": ",".join(f["name"] for f in s["validity"]["flags"]),
            }
        )
    return pd.DataFrame(rows).set_index("engine") if rows else pd.DataFrame()
