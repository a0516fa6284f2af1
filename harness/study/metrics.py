"""The metrics a study judges by: records of one engine run in, one number out (None: no data).

Names: a latency column with a percentile (`ttft.p99`, `tpot.p50`, `e2e.p90`, `queue_delay.p99`), or
one of `RUN_METRICS`. A metric can be restricted to tenants matching a glob (`tenants = "light-*"`).
Each says whether lower or higher is better, so a change can be read as a win or a loss.
"""

from __future__ import annotations

import fnmatch
import functools
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from harness.metrics import SLO, fairness, request_latencies, slo_table

_PERCENTILE = re.compile(r"^(ttft|tpot|e2e|queue_delay)\.p(\d+(?:\.\d+)?)$")


@dataclass
class RunRows:
    """One run's records (or a tenant filter's share of them) and what the metrics read from them, each computed
    once for all the metrics of a unit (latencies and fairness were recomputed per metric: a quarter of a study)."""

    records: pd.DataFrame
    lat: pd.DataFrame

    @functools.cached_property
    def fairness(self) -> dict[str, Any]:
        return fairness(self.records)


def _span(lat: pd.DataFrame) -> float | None:
    if lat.empty:
        return None
    span = float(lat["t_done"].max() - lat["t_scheduled"].min())
    return span if span > 0 else None


def _throughput(rows: RunRows, slo: SLO) -> float | None:
    lat = rows.lat
    span = _span(lat)
    return None if span is None else float(lat.loc[lat["succeeded"], "output_tokens"].sum()) / span


def _goodput(rows: RunRows, slo: SLO) -> float | None:
    span = _span(rows.lat)
    return None if span is None else float(slo_table(rows.lat, slo)["meets_slo"].sum()) / span


def _attainment(rows: RunRows, slo: SLO) -> float | None:
    return None if rows.lat.empty else float(slo_table(rows.lat, slo)["meets_slo"].mean())


def _failed(rows: RunRows, slo: SLO) -> float | None:
    return None if rows.lat.empty else float((~rows.lat["succeeded"]).mean())


def _fair(key: str) -> Callable[[RunRows, SLO], float | None]:
    def value(rows: RunRows, slo: SLO) -> float | None:
        if rows.records["tenant"].nunique() < 2:
            return None
        f = rows.fairness
        if key == "jain":
            return f["jain_index"]
        if key == "vtc_gap":
            return f["vtc_gap"]["gap"]
        slow = f["p99_slowdown_by_tenant"]
        return max(slow.values()) if slow else None

    return value


# name -> (function, higher is better, unit, what it is)
RUN_METRICS: dict[str, tuple[Callable[[RunRows, SLO], float | None], bool, str, str]] = {
    "throughput": (_throughput, True, "tok/s", "output tokens per second of the run"),
    "goodput": (_goodput, True, "req/s", "SLO-meeting requests per second"),
    "attainment": (_attainment, True, "share", "share of requests meeting every SLO limit (failures miss)"),
    "failed": (_failed, False, "share", "share of requests that failed or were shed"),
    "jain": (_fair("jain"), True, "index", "Jain's index over per-tenant service rates"),
    "worst_slowdown": (_fair("slowdown"), False, "x", "the worst tenant's p99 slowdown"),
    "vtc_gap": (_fair("vtc_gap"), False, "service", "VTC service gap between tenants"),
}


@dataclass(frozen=True)
class Metric:
    """A metric by name, optionally over some tenants only."""

    name: str
    tenants: str | None = None  # a glob over tenant names

    @property
    def label(self) -> str:
        return self.name if self.tenants is None else f"{self.name}[{self.tenants}]"

    @property
    def higher_is_better(self) -> bool:
        return RUN_METRICS[self.name][1] if self.name in RUN_METRICS else False

    @property
    def unit(self) -> str:
        return RUN_METRICS[self.name][2] if self.name in RUN_METRICS else "s"

    def value(self, records: pd.DataFrame, slo: SLO, shared: dict[str | None, RunRows] | None = None) -> float | None:
        """This metric on one run's records; `shared` (one dict per run, see `metric_values`) keeps each tenant
        filter's rows for the run's other metrics."""
        shared = {} if shared is None else shared
        if self.tenants not in shared:
            if self.tenants is not None:
                names = records["tenant"].astype(str)
                records = records[names.map(lambda t: fnmatch.fnmatchcase(t, self.tenants or ""))]
            shared[self.tenants] = RunRows(records, request_latencies(records))
        rows = shared[self.tenants]
        lat = rows.lat
        if self.name in RUN_METRICS:
            result = RUN_METRICS[self.name][0](rows, slo)
            return None if result is None or not np.isfinite(result) else float(result)
        m = _PERCENTILE.match(self.name)
        assert m is not None, self.name
        x = lat[m.group(1)].to_numpy(dtype=np.float64)
        x = x[np.isfinite(x)]
        return float(np.percentile(x, float(m.group(2)))) if x.size else None


def metric_values(metrics: Sequence[Metric], records: pd.DataFrame, slo: SLO) -> dict[str, float | None]:
    """Each metric's value on one run's records, by label."""
    shared: dict[str | None, RunRows] = {}
    return {m.label: m.value(records, slo, shared) for m in metrics}


def metric_problem(name: str) -> str | None:
    """Why `name` is not a metric a study knows, or None."""
    if name in RUN_METRICS:
        return None
    m = _PERCENTILE.match(name)
    if m and 0 < float(m.group(2)) <= 100:
        return None
    return f"unknown metric {name!r} (known: ttft|tpot|e2e|queue_delay.pNN, {', '.join(RUN_METRICS)})"
