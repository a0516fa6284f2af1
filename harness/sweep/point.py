"""One engine at one offered rate: the numbers a sweep plots and the SLO check that stops the climb."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import SLO, load_records, request_latencies, slo_table


@dataclass
class Point:
    """One engine at one offered rate: throughput, latencies, SLO attainment and whether it meets the SLO."""

    engine: str
    rate: float  # offered load, requests/s
    phase: str  # "probe", "climb" or "search"
    run_dir: str
    requests: int  # records of this engine (all trials)
    achieved_rps: float | None  # successful requests/s in the steady window (whole run when there is none)
    whole_run_rps: float | None
    output_tok_s: float | None
    ttft_s: float | None  # at the sweep's percentile
    tpot_s: float | None
    e2e_s: float | None
    attainment: float | None  # share of requests meeting every SLO limit (failures count as misses)
    goodput_rps: float | None
    stopped: str | None  # the stop rule that ended a trial early
    meets: bool
    why: str
    # fairness across tenants (first trial; None with one tenant)
    jain: float | None = None  # Jain's index over per-tenant service rates
    worst_slowdown: float | None = None  # the worst tenant's p99 slowdown
    vtc_gap: float | None = None  # the VTC service gap between tenants, service units
    # SLO classes (`--slo-class`): each class's attainment against its own targets, over its records (all
    # trials; a request a stop rule kept from being sent has no known class and is not counted here)
    classes: dict[str, float | None] | None = None


def measure_point(
    run_dir: Path, engine: str, rate: float, phase: str, percentile: float, slo: SLO, min_attainment: float
) -> Point:
    """Read one engine's share of a finished run directory. The rate meets the SLO when no stop rule fired
    and at least `min_attainment` of its requests met every limit (DistServe's goodput criterion)."""
    metrics = json.loads((run_dir / "metrics.json").read_text())
    runs = [r for r in metrics["runs"] if r["engine"] == engine]
    records = load_records(run_dir / "records.jsonl")
    records = records[records["engine"] == engine]
    lat = request_latencies(records)
    met = slo_table(lat, slo)["meets_slo"]
    not_sent = sum(int((r.get("stopped_early") or {}).get("not_sent", 0)) for r in runs)
    planned = len(records) + not_sent  # requests a stop rule kept from being sent count as misses
    attainment = float(met.sum()) / planned if planned else None
    stopped = next((r["stopped_early"]["rule"] for r in runs if r.get("stopped_early")), None)
    first = runs[0]["summary"] if runs else {}
    steady = (first.get("throughput") or {}).get("steady") or {}
    whole = (first.get("throughput") or {}).get("whole_run") or {}
    goodput = (first.get("slo") or {}).get("goodput_rps_steady")
    fair = first.get("fairness") or {}
    slowdowns = (fair.get("p99_slowdown_by_tenant") or {}).values()
    classes = _class_attainment(records, lat, first.get("slo_classes"))
    if stopped is not None:
        meets, why = False, f"stop rule {stopped} fired"
    elif attainment is None or attainment < min_attainment:
        meets, why = False, f"SLO met by {_pct(attainment)} < {_pct(min_attainment)}"
    else:
        meets, why = True, f"SLO met by {_pct(attainment)}"
    return Point(
        engine=engine,
        rate=rate,
        phase=phase,
        run_dir=str(run_dir),
        requests=len(records),
        achieved_rps=steady.get("request_rate") or whole.get("request_rate"),
        whole_run_rps=whole.get("request_rate"),
        output_tok_s=steady.get("output_token_rate") or whole.get("output_token_rate"),
        ttft_s=_pq(lat["ttft"], percentile),
        tpot_s=_pq(lat["tpot"], percentile),
        e2e_s=_pq(lat["e2e"], percentile),
        attainment=attainment,
        goodput_rps=goodput,
        stopped=stopped,
        jain=fair.get("jain_index") if fair.get("tenants", 0) > 1 else None,
        worst_slowdown=max(slowdowns) if slowdowns else None,
        vtc_gap=(fair.get("vtc_gap") or {}).get("gap"),
        meets=meets,
        why=why,
        classes=classes,
    )


def _class_attainment(
    records: pd.DataFrame, lat: pd.DataFrame, per_class: dict[str, Any] | None
) -> dict[str, float | None] | None:
    if not per_class:
        return None
    out: dict[str, float | None] = {}
    for name, row in per_class.items():
        mine = (records["slo_class"] == name).to_numpy()
        slo = SLO(**row["slo"])
        met = slo_table(lat[mine], slo)["meets_slo"] if mine.any() else None
        out[name] = float(met.mean()) if met is not None else None
    return out


def _pq(values: pd.Series, percentile: float) -> float | None:
    x = values.to_numpy(dtype=np.float64)
    x = x[np.isfinite(x)]
    return float(np.percentile(x, percentile)) if x.size else None


def _pct(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"
